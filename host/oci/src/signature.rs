//! Signatures in cosign's key-based format, where `cosign sign --key` stores
//! them and `cosign verify --key` looks (cosign's `specs/SIGNATURE_SPEC.md`).
//!
//! The signatures of the artifact `sha256:HEX` live in the same repository,
//! under the tag `sha256-HEX.sig`: an OCI image manifest with one layer per
//! signature. Each layer is a simple-signing payload ([`SIMPLE_SIGNING`]),
//!
//! ```json
//! {"critical":{"identity":{"docker-reference":"REGISTRY/REPOSITORY"},
//!  "image":{"docker-manifest-digest":"sha256:HEX"},
//!  "type":"cosign container image signature"},"optional":null}
//! ```
//!
//! and its annotation [`SIGNATURE_ANNOTATION`] holds the base64 of an ASN.1
//! DER ECDSA P-256 signature over the SHA-256 of the payload's bytes. The
//! manifest's config is an image config whose `rootfs.diff_ids` lists the
//! layers, as cosign writes it. Signing again appends a layer and keeps every
//! signature already there (other signers', keyless ones), as cosign does.
//!
//! Verifying trusts nothing the registry sends: the `.sig` manifest is read
//! up to [`crate::MAX_MANIFEST`] bytes and at most [`MAX_SIGNATURES`] layers,
//! each payload up to [`MAX_PAYLOAD`] bytes and checked against its digest;
//! a signature counts only if it verifies with a trusted key over those bytes
//! and the payload it signs is a cosign signature of exactly the digest being
//! pulled (so a valid signature copied from another artifact is refused).
//! One such signature accepts the artifact.
//!
//! Keyless signatures (a Fulcio certificate in `dev.sigstore.cosign/certificate`,
//! a Rekor bundle) are carried along when signing and not counted when
//! verifying: they need Fulcio's and Rekor's roots, which toolhost does not
//! have (docs/oci.md says how they would plug in).

use crate::keys::{PublicKey, SigningKey};
use crate::store::{self, Signer};
use crate::trust::TrustEntry;
use crate::{Missing, OCI_MANIFEST, Registry, Source};
use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::{Reference, RegistryOperation};
use std::collections::BTreeMap;

/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of a cosign signature.
pub const SIGNATURE_TYPE: &str = "cosign container image signature";
/// The config media type of a `.sig` manifest (an image config, as cosign writes).
pub const SIGNATURES_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// The largest payload read (cosign's are a few hundred bytes).
pub const MAX_PAYLOAD: u64 = 64 << 10;
/// The most layers a `.sig` manifest may have for toolhost to check it.
pub const MAX_SIGNATURES: usize = 64;
/// The longest base64 signature annotation read.
const MAX_SIGNATURE_TEXT: usize = 4 << 10;

impl Signer {
    fn of(key: &PublicKey) -> Signer {
        Signer { key: key.name.clone(), fingerprint: key.fingerprint() }
    }
}

/// What the signature check of a pull found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No `[[trust]]` scope covers the reference, or its scope is exempt
    /// (no keys, `require = false`): nothing was checked.
    Unchecked,
    /// Its scope does not require a signature and it has none.
    Unsigned {
        /// The scope that applied.
        scope: String,
    },
    /// A signature verified with a trusted key.
    Signed(Signer),
}

impl Verdict {
    /// The verified signer, if any.
    pub fn signer(&self) -> Option<&Signer> {
        match self {
            Verdict::Signed(signer) => Some(signer),
            _ => None,
        }
    }
}

/// The tag holding the signatures of `digest` (`sha256:HEX` → `sha256-HEX.sig`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The simple-signing payload cosign signs for `digest` in `source`'s repository.
pub fn payload(source: &Source, digest: &str) -> Vec<u8> {
    // Keys in cosign's order, which is both insertion and alphabetical order,
    // so the bytes are the same whether or not serde_json keeps the order.
    let reference = format!("{}/{}", source.reference().registry(), source.repository());
    let payload = serde_json::json!({
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": digest},
            "type": SIGNATURE_TYPE,
        },
        "optional": null,
    });
    serde_json::to_vec(&payload).expect("a JSON value encodes")
}

/// The digest a verified payload signs, if it is a cosign signature payload.
/// Keys are matched without regard to case, as cosign's decoder does, and a
/// key given twice that way makes the payload unusable.
fn signed_digest(payload: &[u8]) -> Option<String> {
    fn field<'a>(object: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
        let mut found = object.as_object()?.iter().filter(|(key, _)| key.eq_ignore_ascii_case(name));
        let (_, value) = found.next()?;
        found.next().is_none().then_some(value)
    }
    // Strict: a member named twice exactly is as unusable as one named twice in another case.
    let value = toolhost_grants::json::strict(payload).ok()?;
    let critical = field(&value, "critical")?;
    if field(critical, "type")?.as_str()? != SIGNATURE_TYPE {
        return None;
    }
    let digest = field(field(critical, "image")?, "docker-manifest-digest")?.as_str()?;
    Some(digest.to_owned())
}

/// What one signature layer came to.
enum Finding {
    /// Verified by a trusted key, for another artifact (`None`: for no image at all).
    ForAnother { key: String, digest: Option<String> },
    /// Its payload could not be fetched or did not match its digest.
    Broken(anyhow::Error),
    /// No trusted key verifies it.
    Untrusted,
}

/// Reads the public keys an entry trusts, or says which one cannot be used.
pub fn trusted_keys(source: &Source, entry: &TrustEntry) -> Result<Vec<PublicKey>> {
    entry
        .keys
        .iter()
        .map(|path| {
            PublicKey::read(path).map_err(|why| {
                anyhow!(
                    "{source}: `[[trust]]` for `{}`: {why}; fix the key file or the entry's `keys`; nothing was written",
                    entry.scope
                )
            })
        })
        .collect()
}

impl Registry {
    /// Checks the signatures of `digest` (the artifact `source` resolved to)
    /// against the `[[trust]]` entry that covers it, if any. An error is one
    /// line saying why the artifact is refused and what to do.
    pub async fn verify(&self, source: &Source, digest: &str, entry: Option<&TrustEntry>) -> Result<Verdict> {
        // No scope, or one that exempts its references (`require = false`, no keys).
        let Some(entry) = entry.filter(|entry| !entry.keys.is_empty()) else { return Ok(Verdict::Unchecked) };
        let scope = entry.scope.to_string();
        let keys = trusted_keys(source, entry)?;
        let tag = signature_tag(digest);
        let token = self.authorize(source.reference(), RegistryOperation::Pull).await?;
        let body = match self.get_manifest(source, &tag, token.as_deref()).await {
            Err(Missing) => None,
            Ok(found) => Some(found?.0),
        };
        let manifest = match &body {
            None => None,
            Some(body) => Some(parse_signatures(body).map_err(|why| {
                anyhow!("{source}: its signatures (tag `{tag}`) {why}; they were tampered with or written by another tool: sign it again; nothing was written")
            })?),
        };
        let layers: Vec<&OciDescriptor> = manifest
            .iter()
            .flat_map(|manifest| &manifest.layers)
            .filter(|layer| layer.media_type == SIMPLE_SIGNING)
            .collect();
        if layers.is_empty() {
            if !entry.require {
                return Ok(Verdict::Unsigned { scope });
            }
            bail!(
                "{source}: not signed: {}/{} has no cosign signature for {digest} (tag `{tag}`), and `[[trust]]` \
                 for `{scope}` requires one; sign it (`toolhost push --sign KEY`, or `cosign sign --key KEY`) or set \
                 `require = false` there; nothing was written",
                source.registry(),
                source.repository()
            );
        }
        let pinned = source.pinned(digest);
        let mut findings = Vec::new();
        for layer in &layers {
            let finding = self.check_layer(source, &pinned, layer, digest, &keys).await;
            match finding {
                Ok(signer) => return Ok(Verdict::Signed(signer)),
                Err(finding) => findings.push(finding),
            }
        }
        let names: Vec<&str> = keys.iter().map(|key| key.name.as_str()).collect();
        if let Some(Finding::ForAnother { key, digest: other }) =
            findings.iter().find(|finding| matches!(finding, Finding::ForAnother { .. }))
        {
            let what = match other {
                Some(other) => format!("is for {other}, not {digest} (it was copied from another artifact)"),
                None => "signs something that is not a cosign image signature".to_owned(),
            };
            bail!(
                "{source}: tampered signature: the signature by {key} in `{tag}` {what}; have the publisher sign \
                 {digest}; nothing was written"
            );
        }
        if let Some(Finding::Broken(err)) = findings.iter().find(|finding| matches!(finding, Finding::Broken(_))) {
            let err = format!("{err:#}");
            let why = err.strip_prefix(&format!("{source}: ")).unwrap_or(&err);
            let why = why.strip_suffix("; nothing was written").unwrap_or(why);
            bail!("{source}: tampered signature: {why}; no other signature verifies; nothing was written");
        }
        bail!(
            "{source}: signature not trusted: none of its {} signature{} in `{tag}` verifies with the keys `[[trust]]` \
             for `{scope}` trusts ({}): it was signed with another key, or altered; add the signer's public key to \
             that entry if you trust it; nothing was written",
            layers.len(),
            if layers.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
    }

    /// Checks one signature layer against the keys.
    async fn check_layer(
        &self,
        source: &Source,
        pinned: &Reference,
        layer: &OciDescriptor,
        digest: &str,
        keys: &[PublicKey],
    ) -> std::result::Result<Signer, Finding> {
        let Some(signature) = layer.annotations.as_ref().and_then(|notes| notes.get(SIGNATURE_ANNOTATION)) else {
            return Err(Finding::Untrusted);
        };
        if signature.len() > MAX_SIGNATURE_TEXT {
            return Err(Finding::Untrusted);
        }
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return Err(Finding::Untrusted);
        };
        let payload =
            self.blob(source, pinned, layer, MAX_PAYLOAD, "signature payload").await.map_err(Finding::Broken)?;
        let Some(key) = keys.iter().find(|key| key.verifies(&payload, &signature)) else {
            return Err(Finding::Untrusted);
        };
        match signed_digest(&payload) {
            Some(signed) if signed == digest => Ok(Signer::of(key)),
            other => Err(Finding::ForAnother { key: key.name.clone(), digest: other }),
        }
    }

    /// Signs the artifact `digest` in `source`'s repository with `key` and
    /// stores the signature where `cosign sign --key` would, keeping the
    /// signatures already there.
    pub async fn sign(&self, source: &Source, digest: &str, key: &SigningKey) -> Result<Signer> {
        let tag = signature_tag(digest);
        let reference =
            Reference::with_tag(source.reference().registry().to_owned(), source.repository().to_owned(), tag.clone());
        let token = self.authorize(&reference, RegistryOperation::Push).await?;
        let mut layers = match self.get_manifest(source, &tag, token.as_deref()).await {
            Err(Missing) => Vec::new(),
            Ok(found) => {
                parse_signatures(&found?.0)
                    .map_err(|why| {
                        anyhow!("{source}: the signatures already in `{tag}` {why}; delete that tag to start afresh")
                    })?
                    .layers
            }
        };
        if layers.len() >= MAX_SIGNATURES {
            bail!("{source}: `{tag}` already holds {} signatures, the most toolhost checks", layers.len());
        }
        let payload = payload(source, digest);
        let signature = key.sign(&payload).map_err(|why| anyhow!("{source}: could not sign: {why}"))?;
        let payload_digest = store::digest_of(&payload);
        layers.push(OciDescriptor {
            media_type: SIMPLE_SIGNING.to_owned(),
            digest: payload_digest.clone(),
            size: payload.len() as i64,
            annotations: Some(BTreeMap::from([(
                SIGNATURE_ANNOTATION.to_owned(),
                base64::engine::general_purpose::STANDARD.encode(&signature),
            )])),
            ..Default::default()
        });
        // The image config cosign writes: one diff_id and one history entry per layer.
        let epoch = "0001-01-01T00:00:00Z";
        let config = serde_json::json!({
            "architecture": "",
            "created": epoch,
            "history": layers.iter().map(|_| serde_json::json!({"created": epoch})).collect::<Vec<_>>(),
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": layers.iter().map(|layer| layer.digest.clone()).collect::<Vec<_>>()},
            "config": {},
        });
        let config = serde_json::to_vec(&config).context("could not encode the signature config")?;
        let config_digest = store::digest_of(&config);
        let manifest = OciImageManifest {
            media_type: Some(OCI_MANIFEST.to_owned()),
            config: OciDescriptor {
                media_type: SIGNATURES_CONFIG.to_owned(),
                digest: config_digest.clone(),
                size: config.len() as i64,
                ..Default::default()
            },
            layers,
            ..Default::default()
        };
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth()).await;
        self.client
            .push_blob(&reference, payload, &payload_digest)
            .await
            .map_err(|err| self.explain(err, &reference))?;
        self.client.push_blob(&reference, config, &config_digest).await.map_err(|err| self.explain(err, &reference))?;
        let body = serde_json::to_vec(&manifest).context("could not encode the signature manifest")?;
        self.client
            .push_manifest_raw(&reference, body, reqwest::header::HeaderValue::from_static(OCI_MANIFEST))
            .await
            .map_err(|err| self.explain(err, &reference))?;
        Ok(Signer::of(key.public_key()))
    }
}

/// Parses a `.sig` manifest, bounded in layers; `Err` says what is wrong with it.
fn parse_signatures(body: &[u8]) -> std::result::Result<OciImageManifest, String> {
    let manifest: OciImageManifest =
        toolhost_grants::json::strict_as(body).map_err(|err| match toolhost_grants::json::repeated_member(&err) {
            Some(said) => format!("are JSON in which {said}"),
            None => "are not an OCI image manifest".to_owned(),
        })?;
    if manifest.layers.len() > MAX_SIGNATURES {
        return Err(format!("have {} layers, more than the {MAX_SIGNATURES} toolhost checks", manifest.layers.len()));
    }
    for layer in &manifest.layers {
        crate::reference::check_digest(&layer.digest).map_err(|why| format!("have a layer whose {why}"))?;
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:b5810a86cbe1e6ceff7fdd8f9cc0e850758d1f8acfdd89e5b17190e45baf5e77";

    #[test]
    fn the_payload_and_tag_are_cosigns() {
        let source: Source = "127.0.0.1:5055/tools/hash:1".parse().unwrap();
        // What `cosign sign` 2.5 stored for that artifact, byte for byte.
        let cosign = r#"{"critical":{"identity":{"docker-reference":"127.0.0.1:5055/tools/hash"},"image":{"docker-manifest-digest":"sha256:b5810a86cbe1e6ceff7fdd8f9cc0e850758d1f8acfdd89e5b17190e45baf5e77"},"type":"cosign container image signature"},"optional":null}"#;
        assert_eq!(String::from_utf8(payload(&source, DIGEST)).unwrap(), cosign);
        assert_eq!(
            signature_tag(DIGEST),
            "sha256-b5810a86cbe1e6ceff7fdd8f9cc0e850758d1f8acfdd89e5b17190e45baf5e77.sig"
        );
        assert_eq!(signed_digest(cosign.as_bytes()).as_deref(), Some(DIGEST));
    }

    #[test]
    fn rejects_payloads_that_are_not_a_cosign_signature_of_one_digest() {
        let cases = [
            "",
            "[]",
            r#"{"critical":{"image":{"docker-manifest-digest":"sha256:00"},"type":"something else"}}"#,
            r#"{"critical":{"image":{"docker-manifest-digest":7},"type":"cosign container image signature"}}"#,
            r#"{"critical":{"image":{},"type":"cosign container image signature"}}"#,
            r#"{"critical":{"image":{"docker-manifest-digest":"sha256:aa","Docker-Manifest-Digest":"sha256:bb"},"type":"cosign container image signature"}}"#,
            // Named twice exactly: serde_json alone would read the last.
            r#"{"critical":{"image":{"docker-manifest-digest":"sha256:aa","docker-manifest-digest":"sha256:bb"},"type":"cosign container image signature"}}"#,
        ];
        for case in cases {
            assert_eq!(signed_digest(case.as_bytes()), None, "{case}");
        }
        // The spec's own example capitalizes a key; cosign's decoder takes it.
        let capital = r#"{"critical":{"image":{"Docker-manifest-digest":"sha256:aa"},"type":"cosign container image signature"}}"#;
        assert_eq!(signed_digest(capital.as_bytes()).as_deref(), Some("sha256:aa"));
    }
}
