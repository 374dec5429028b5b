//! TLS settings shared by every connection toolhost makes: plugin HTTPS over
//! `wasi:http` and model requests. `ca_file` in the config adds trusted roots
//! (PEM) to the built-in Mozilla set, for private CAs and TLS-inspecting proxies.

use crate::readfile::{self, limits};
use anyhow::{Context, Result, bail};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;

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
