//! TLS settings shared by every connection toolhost makes: plugin HTTPS over
//! `wasi:http` and model requests. `ca_file` in the config adds trusted roots
//! (PEM) to the built-in Mozilla set, for private CAs and TLS-inspecting proxies.
//! Also how an untrusted certificate is recognised in an error, wherever a
//! connection failed (model requests, registries).

use anyhow::{Context, Result, bail};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use std::sync::Arc;
use toolhost_grants::readfile::{self, limits};

/// Reads the PEM certificates in `path` (a regular file; at least one certificate).
pub fn load_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = readfile::read_regular(path, limits::PEM)
        .with_context(|| format!("could not read the CA file {}", path.display()))?;
    let mut certs = Vec::new();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|err| {
            anyhow::anyhow!(
                "the CA file {} is not valid PEM: {err} (expected BEGIN CERTIFICATE blocks)",
                path.display()
            )
        })?;
        certs.push(cert.into_owned());
    }
    if certs.is_empty() {
        bail!("the CA file {} holds no certificate (expected one or more BEGIN CERTIFICATE blocks)", path.display());
    }
    Ok(certs)
}

/// The TLS client settings for plugin HTTPS: webpki's roots (Mozilla's set),
/// plus the certificates of `ca_file` when given, with ring's crypto. Built
/// once per `Host` and shared by every call.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
    if let Some(path) = ca_file {
        for (index, cert) in load_ca_file(path)?.into_iter().enumerate() {
            roots.add(cert).map_err(|err| {
                anyhow::anyhow!(
                    "the CA file {}: certificate {} cannot be used as a trusted root: {err}",
                    path.display(),
                    index + 1
                )
            })?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS is not available")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The certificate error behind `error`, if a TLS peer's certificate was not
/// trusted or none was offered: looked for along the whole chain of causes,
/// also inside I/O errors (which hide what they wrap from `source()`).
pub fn untrusted_certificate<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(error);
    while let Some(cause) = next {
        if let Some(tls @ (rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented)) =
            rustls_error(cause)
        {
            return Some(tls);
        }
        next = cause.source();
    }
    None
}

/// `error` as a rustls error, also when an I/O error wraps it.
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner: &(dyn std::error::Error + 'static) = error.downcast_ref::<std::io::Error>()?.get_ref()?;
    rustls_error(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_a_ca_file_that_is_not_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("empty.pem", "", "holds no certificate"),
            ("key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "holds no certificate"),
            (
                "garbage.pem",
                "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
                "cannot be used as a trusted root",
            ),
        ];
        for (name, text, expected) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let err = format!("{:#}", client_config(Some(&path)).unwrap_err());
            assert!(err.contains(expected) && err.contains(name), "{name}: {err}");
        }
        let err = format!("{:#}", client_config(Some(&dir.path().join("missing.pem"))).unwrap_err());
        assert!(err.contains("could not read the CA file") && err.contains("missing.pem"), "{err}");
    }

    #[test]
    fn without_a_ca_file_the_built_in_roots_are_used() {
        assert!(client_config(None).is_ok());
    }
}
