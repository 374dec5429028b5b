//! A certificate authority made on the fly for the HTTPS tests: its root in
//! PEM (what a `ca_file` holds) and a server certificate it signed for
//! `127.0.0.1` and `localhost`, ready for [`super::server::TestServer::start_tls`].

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// A test CA and the server settings of a certificate it issued.
pub struct TestCa {
    /// The CA's root certificate, PEM.
    pub root_pem: String,
    /// TLS server settings presenting the issued certificate.
    pub server: Arc<rustls::ServerConfig>,
    /// The issued certificate and its key, PEM (for servers not in Rust).
    pub server_cert_pem: String,
    pub server_key_pem: String,
}

impl TestCa {
    /// A new CA named `name`, and a server certificate for 127.0.0.1 and localhost.
    pub fn new(name: &str) -> TestCa {
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.distinguished_name.push(DnType::CommonName, name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let root = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().expect("server key");
        let mut server_params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).expect("server params");
        server_params.distinguished_name.push(DnType::CommonName, "toolhost test server");
        let server_cert = server_params.signed_by(&server_key, &issuer).expect("server certificate");

        let (server_cert_pem, server_key_pem) = (server_cert.pem(), server_key.serialize_pem());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![server_cert.der().clone()], key)
            .expect("server TLS settings");
        TestCa { root_pem: root.pem(), server: Arc::new(server), server_cert_pem, server_key_pem }
    }
}
