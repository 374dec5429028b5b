//! Plugins in OCI registries: `toolhost pull` and `toolhost push`.
//!
//! A plugin is published as a CNCF Wasm OCI artifact, the layout wkg,
//! `oci-wasm` and other Wasm tools use: an OCI image manifest whose config
//! has the media type `application/vnd.wasm.config.v0+json` (architecture
//! `wasm`, os `wasip2`, the layer digests, the component's imports and
//! exports) and whose only layer is the component, `application/wasm`, so
//! wkg and Wassette pull what toolhost pushes, and toolhost what they push.
//! When the plugin has a manifest (`NAME.toml`), its text travels in the OCI
//! manifest's annotation [`MANIFEST_ANNOTATION`], which other tools ignore
//! (covered by the artifact's digest). Artifacts pushed by earlier toolhost
//! versions carried it as a second layer of type [`MANIFEST_LAYER`]; pull
//! still reads those.
//!
//! Nothing the registry sends is trusted: the OCI manifest is read up to
//! [`MAX_MANIFEST`] bytes and its SHA-256 checked against the pinned digest
//! (and the registry's `Docker-Content-Digest`), every layer is read up to
//! its declared size (itself bounded) and its SHA-256 checked against the
//! manifest's, and the component must compile and be a toolhost plugin
//! before anything is written. Writing is atomic ([`store`]).
//!
//! Signatures are cosign's key-based ones ([`signature`]): `push --sign`
//! stores one where `cosign sign --key` would, and `pull` checks them
//! against the config's `[[trust]]` ([`trust`]) before anything is fetched
//! beyond the manifest, recording the verified signer in the lock.
//!
//! The registry client is `oci-client` over reqwest and rustls (ring), with
//! the config's `ca_file` added to the trusted roots. Registries are reached
//! over HTTPS; one on this machine (`localhost`, `127.0.0.0/8`, `[::1]`) that
//! does not speak TLS over plain HTTP, and any other only with `insecure`.

pub mod credentials;
pub mod keys;
mod publish;
mod pull;
pub mod reference;
pub mod signature;
pub mod store;
pub mod trust;

pub use credentials::Credentials;
pub use keys::{PublicKey, SigningKey};
pub use publish::Publishable;
pub use pull::{PullOutcome, Pulled, check_sources, pull};
pub use reference::Source;
pub use signature::Verdict;
pub use store::{LOCK_FILE, Lock, Locked, Signer};
pub use trust::{Trust, TrustEntry};

use anyhow::{Context, Result, anyhow, bail};
use futures_util::StreamExt;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use toolhost_grants::readfile::limits;

/// The OCI image manifest media type.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config media type of a Wasm artifact.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a component.
pub const WASM_LAYER: &str = "application/wasm";
/// The layer media type of a plugin's manifest (`NAME.toml`), toolhost's own.
pub const MANIFEST_LAYER: &str = "application/vnd.toolhost.manifest.v1+toml";
/// The OCI manifest annotation holding a plugin's manifest (`NAME.toml`) text.
pub const MANIFEST_ANNOTATION: &str = "dev.toolhost.plugin.manifest";
/// The largest OCI manifest read (the distribution spec's 4 MiB).
pub const MAX_MANIFEST: u64 = 4 << 20;
/// The largest component read: what the loader reads of a `.wasm`.
pub const MAX_WASM: u64 = limits::WASM;
/// The largest plugin manifest read.
pub const MAX_TOML: u64 = limits::TOML;

const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, \
                      application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Plain HTTP to any registry, not only loopback ones.
    pub insecure: bool,
    /// Extra trusted roots (the config's `ca_file`).
    pub ca_file: Option<PathBuf>,
}

/// A client for the registry of one reference.
pub struct Registry {
    client: oci_client::Client,
    http: reqwest::Client,
    scheme: &'static str,
    registry: String,
    credentials: Credentials,
}

/// What a registry holds under a reference: the artifact's digest and manifest.
pub struct Resolved {
    /// The artifact's digest (of its OCI manifest), verified.
    pub digest: String,
    manifest: OciImageManifest,
}

impl Resolved {
    fn layer(&self, media_type: &str) -> Option<&OciDescriptor> {
        self.manifest.layers.iter().find(|layer| layer.media_type == media_type)
    }
}

/// A plugin fetched from a registry, every digest verified.
pub struct Fetched {
    /// The artifact's digest.
    pub digest: String,
    /// The component.
    pub wasm: std::sync::Arc<[u8]>,
    /// Its digest.
    pub wasm_digest: String,
    /// The plugin manifest (`NAME.toml`) and its digest, when the artifact carries one.
    pub manifest: Option<(String, String)>,
}

impl Registry {
    /// A client for `source`'s registry, with its credentials. A registry on
    /// this machine is asked over HTTPS first and used over plain HTTP if it
    /// does not speak TLS (what Docker does for `localhost`); one whose
    /// certificate is not trusted is an error, not a reason to fall back.
    pub async fn connect(source: &Source, options: &RegistryOptions) -> Result<Registry> {
        // reqwest is built without a default TLS crypto provider; install ring's once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = source.registry().to_owned();
        let roots = match &options.ca_file {
            Some(path) => toolhost_runtime::tls::load_ca_file(path)?,
            None => Vec::new(),
        };
        let mut certificates = Vec::with_capacity(roots.len());
        for root in &roots {
            certificates.push(
                reqwest::Certificate::from_der(root)
                    .map_err(|err| anyhow!("a certificate of the CA file is not usable: {err}"))?,
            );
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .tls_certs_merge(certificates)
            .build()
            .map_err(|err| anyhow!("could not set up the registry client: {err}"))?;
        let plain = if options.insecure {
            true
        } else if reference::is_loopback(&registry) {
            match http.get(format!("https://{registry}/v2/")).timeout(Duration::from_secs(5)).send().await {
                Ok(_) => false,
                Err(err) if toolhost_runtime::tls::untrusted_certificate(&err).is_some() => bail!(
                    "could not reach the registry at https://{registry}: {} (add the CA that signed its \
                     certificate to `ca_file` in the config)",
                    describe_cause(&err)
                ),
                Err(_) => true,
            }
        } else {
            false
        };
        let config = oci_client::client::ClientConfig {
            protocol: if plain {
                oci_client::client::ClientProtocol::Http
            } else {
                oci_client::client::ClientProtocol::Https
            },
            extra_root_certificates: roots
                .iter()
                .map(|cert| oci_client::client::Certificate {
                    encoding: oci_client::client::CertificateEncoding::Der,
                    data: cert.to_vec(),
                })
                .collect(),
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            user_agent: concat!("toolhost/", env!("CARGO_PKG_VERSION")),
            // A multi-platform index is not a plugin; say so rather than pick one.
            platform_resolver: None,
            ..Default::default()
        };
        let client = oci_client::Client::try_from(config)
            .map_err(|err| anyhow!("could not set up the registry client: {}", describe_cause(&err)))?;
        let credentials = Credentials::for_registry(&registry)?;
        Ok(Registry { client, http, scheme: if plain { "http" } else { "https" }, registry, credentials })
    }

    fn auth(&self) -> RegistryAuth {
        self.credentials.to_auth()
    }

    /// Authenticates for `operation` on `reference`; a bearer token when the
    /// registry hands one out.
    async fn authorize(&self, reference: &Reference, operation: RegistryOperation) -> Result<Option<String>> {
        self.client.auth(reference, &self.auth(), operation).await.map_err(|err| self.explain(err, reference))
    }

    /// Fetches and verifies the OCI manifest `source` names.
    pub async fn resolve(&self, source: &Source) -> Result<Resolved> {
        let reference = source.reference();
        let token = self.authorize(reference, RegistryOperation::Pull).await?;
        let (body, header) = match source.digest() {
            Some(pinned) => match self.get_manifest(source, pinned, token.as_deref()).await {
                Err(Missing) => {
                    // Say what the tag holds instead, when there is a tag.
                    let now = match source.tag() {
                        Some(tag) => match self.get_manifest(source, tag, token.as_deref()).await {
                            Ok(Ok((body, _))) => format!(" (the tag `{tag}` holds {})", store::digest_of(&body)),
                            _ => String::new(),
                        },
                        None => String::new(),
                    };
                    bail!(
                        "{source}: the pinned digest {pinned} is not in {}/{}{now}; check the digest, or pull \
                         without it to take what the tag holds",
                        self.registry,
                        source.repository()
                    );
                }
                Ok(found) => found?,
            },
            None => {
                let tag = source.tag().unwrap_or("latest");
                match self.get_manifest(source, tag, token.as_deref()).await {
                    Err(Missing) => bail!(
                        "{source}: not found: the registry {} has no tag `{tag}` in `{}` (check the \
                         repository and tag, or `toolhost push` it first)",
                        self.registry,
                        source.repository()
                    ),
                    Ok(found) => found?,
                }
            }
        };
        let digest = store::digest_of(&body);
        if let Some(pinned) = source.digest()
            && pinned != digest
        {
            bail!(
                "{source}: digest mismatch: the registry sent a manifest whose digest is {digest}, not the pinned {pinned}; nothing was written"
            );
        }
        if let Some(header) = header
            && header.starts_with("sha256:")
            && header != digest
        {
            bail!(
                "{source}: digest mismatch: the registry says the manifest is {header} but its content is {digest}; nothing was written"
            );
        }
        // Strict: the manifest names the layer whose digest is checked; a
        // member named twice could name one layer to toolhost and another to
        // the tool that signed it.
        let versioned = toolhost_grants::json::strict(&body)
            .map_err(|err| anyhow!("{source}: the registry sent a manifest that is not strict JSON: {err}"))?;
        let media_type = versioned.get("mediaType").and_then(|value| value.as_str()).unwrap_or(OCI_MANIFEST);
        if media_type.contains("index") || media_type.contains("manifest.list") {
            bail!(
                "{source} is an image index (several artifacts), not one Wasm component; pull one of its manifests by digest"
            );
        }
        let manifest: OciImageManifest = serde_json::from_value(versioned).map_err(|err| {
            anyhow!("{source}: the registry sent a manifest that is not an OCI image manifest: {err}")
        })?;
        check_layout(source, &manifest)?;
        Ok(Resolved { digest, manifest })
    }

    /// GETs the manifest `what` (a tag or digest), bounded. `Err(Missing)` on 404.
    async fn get_manifest(
        &self,
        source: &Source,
        what: &str,
        token: Option<&str>,
    ) -> std::result::Result<Result<(Vec<u8>, Option<String>)>, Missing> {
        let url = format!("{}://{}/v2/{}/manifests/{what}", self.scheme, self.registry, source.repository());
        let mut request = self.http.get(&url).header(reqwest::header::ACCEPT, ACCEPT);
        request = match (token, &self.credentials) {
            (Some(token), _) => request.bearer_auth(token),
            (None, Credentials::Basic { username, password, .. }) => {
                request.basic_auth(username, Some(password.expose()))
            }
            (None, Credentials::Anonymous) => request,
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(err) => return Ok(Err(self.unreachable(&err))),
        };
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(Missing);
        }
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Ok(Err(self.unauthorized(status.as_u16(), source)));
        }
        if !status.is_success() {
            return Ok(Err(anyhow!("{source}: the registry {} answered HTTP {status}", self.registry)));
        }
        let header =
            response.headers().get("docker-content-digest").and_then(|value| value.to_str().ok()).map(str::to_owned);
        Ok(read_bounded(response, MAX_MANIFEST)
            .await
            .map(|body| (body, header))
            .map_err(|err| anyhow!("{source}: could not read the manifest from the registry: {err}")))
    }

    /// Fetches the artifact's layers, each verified against its digest.
    pub async fn fetch(&self, source: &Source, resolved: &Resolved) -> Result<Fetched> {
        let reference = source.pinned(&resolved.digest);
        let wasm_layer = resolved.layer(WASM_LAYER).expect("checked by check_layout");
        let wasm = self.blob(source, &reference, wasm_layer, MAX_WASM, "layer").await?;
        let annotated = resolved.manifest.annotations.as_ref().and_then(|notes| notes.get(MANIFEST_ANNOTATION));
        let manifest = match (annotated, resolved.layer(MANIFEST_LAYER)) {
            (Some(text), _) => {
                if text.len() as u64 > MAX_TOML {
                    bail!("{source}: the plugin manifest annotation is more than {MAX_TOML} bytes");
                }
                Some((text.clone(), store::digest_of(text.as_bytes())))
            }
            (None, Some(layer)) => {
                let bytes = self.blob(source, &reference, layer, MAX_TOML, "layer").await?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| anyhow!("{source}: the plugin manifest layer is not UTF-8 text"))?;
                Some((text, layer.digest.clone()))
            }
            (None, None) => None,
        };
        Ok(Fetched {
            digest: resolved.digest.clone(),
            wasm: wasm.into(),
            wasm_digest: wasm_layer.digest.clone(),
            manifest,
        })
    }

    /// Downloads one blob, at most its declared size (itself at most `limit`),
    /// and checks its SHA-256. `what` names it in messages ("layer").
    async fn blob(
        &self,
        source: &Source,
        reference: &Reference,
        layer: &OciDescriptor,
        limit: u64,
        what: &str,
    ) -> Result<Vec<u8>> {
        let size = u64::try_from(layer.size)
            .map_err(|_| anyhow!("{source}: the {what} {} declares a negative size", layer.digest))?;
        if size > limit {
            bail!(
                "{source}: the {} {what} is {size} bytes, more than the {limit} bytes toolhost accepts",
                layer.media_type
            );
        }
        let mut stream =
            self.client.pull_blob_stream(reference, layer).await.map_err(|err| self.explain(err, reference))?;
        if stream.content_length.is_some_and(|length| length > size) {
            bail!("{source}: the registry sends more bytes for the {what} {} than the manifest declares", layer.digest);
        }
        let mut bytes = Vec::with_capacity(size.min(64 << 20) as usize);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|err| {
                if err.to_string().to_lowercase().contains("digest") {
                    anyhow!(
                        "{source}: digest mismatch: the {what}'s content does not match its digest {} \
                         (the registry's copy is corrupt or was tampered with); nothing was written",
                        layer.digest
                    )
                } else {
                    anyhow!("{source}: the download of the {what} {} broke off: {}", layer.digest, describe_cause(&err))
                }
            })?;
            if bytes.len() as u64 + chunk.len() as u64 > size {
                bail!(
                    "{source}: the registry sent more bytes for the {what} {} than the manifest declares",
                    layer.digest
                );
            }
            bytes.extend_from_slice(&chunk);
        }
        let actual = store::digest_of(&bytes);
        if actual != layer.digest {
            bail!(
                "{source}: digest mismatch: the {what}'s content is {actual}, not {} (the registry's copy is corrupt \
                 or was tampered with); nothing was written",
                layer.digest
            );
        }
        Ok(bytes)
    }

    /// Pushes a plugin (`wasm`, with its manifest text) under `source`'s tag;
    /// returns the artifact's digest.
    pub async fn push(&self, source: &Source, plugin: &Publishable) -> Result<String> {
        if source.digest().is_some() {
            bail!("{source}: push to a tag, not a digest (the digest is known only once the artifact is built)");
        }
        let reference = source.reference();
        self.authorize(reference, RegistryOperation::Push).await?;
        let layers = [(WASM_LAYER, plugin.wasm.clone(), format!("{}.wasm", plugin.name))];
        let layer_digests: Vec<String> = layers.iter().map(|(_, bytes, _)| store::digest_of(bytes)).collect();
        let config = serde_json::json!({
            "created": created()?.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "author": null,
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": layer_digests,
            "component": {
                "exports": plugin.exports,
                "imports": plugin.imports,
                "target": null,
            },
        });
        let config = serde_json::to_vec(&config).context("could not encode the artifact config")?;
        let descriptor = |media_type: &str, bytes: &[u8], title: Option<&str>| OciDescriptor {
            media_type: media_type.to_owned(),
            digest: store::digest_of(bytes),
            size: bytes.len() as i64,
            annotations: title
                .map(|title| BTreeMap::from([("org.opencontainers.image.title".to_owned(), title.to_owned())])),
            ..Default::default()
        };
        let manifest = OciImageManifest {
            media_type: Some(OCI_MANIFEST.to_owned()),
            config: descriptor(WASM_CONFIG, &config, None),
            layers: layers
                .iter()
                .map(|(media_type, bytes, title)| descriptor(media_type, bytes, Some(title)))
                .collect(),
            annotations: plugin
                .manifest
                .as_ref()
                .map(|text| BTreeMap::from([(MANIFEST_ANNOTATION.to_owned(), text.clone())])),
            ..Default::default()
        };
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth()).await;
        for ((_, bytes, _), digest) in layers.iter().zip(&layer_digests) {
            self.client
                .push_blob(reference, bytes.clone(), digest)
                .await
                .map_err(|err| self.explain(err, reference))?;
        }
        let config_digest = store::digest_of(&config);
        self.client.push_blob(reference, config, &config_digest).await.map_err(|err| self.explain(err, reference))?;
        let body = serde_json::to_vec(&manifest).context("could not encode the OCI manifest")?;
        let digest = store::digest_of(&body);
        self.client
            .push_manifest_raw(reference, body, reqwest::header::HeaderValue::from_static(OCI_MANIFEST))
            .await
            .map_err(|err| self.explain(err, reference))?;
        Ok(digest)
    }

    fn unauthorized(&self, status: u16, source: &dyn std::fmt::Display) -> anyhow::Error {
        match self.credentials.origin() {
            Some(from) => anyhow!(
                "{source}: unauthorized (HTTP {status}): the registry {} refused the credentials from {from}; check them",
                self.registry
            ),
            None => anyhow!(
                "{source}: unauthorized (HTTP {status}): the registry {} needs credentials: set {} and {}, or log in \
                 with `docker login {}`",
                self.registry,
                credentials::USERNAME_ENV,
                credentials::PASSWORD_ENV,
                self.registry
            ),
        }
    }

    fn unreachable(&self, err: &reqwest::Error) -> anyhow::Error {
        let why = if err.is_timeout() { "it did not answer in time".to_owned() } else { describe_cause(err) };
        let hint = if toolhost_runtime::tls::untrusted_certificate(err).is_some() {
            " (add the CA that signed its certificate to `ca_file` in the config)"
        } else {
            ""
        };
        anyhow!("could not reach the registry at {}://{}: {why}{hint}", self.scheme, self.registry)
    }

    /// One line for an oci-client error.
    fn explain(&self, err: oci_client::errors::OciDistributionError, reference: &Reference) -> anyhow::Error {
        use oci_client::errors::{OciDistributionError as E, OciErrorCode};
        let what = reference.whole();
        match err {
            E::RequestError(err) => self.unreachable(&err),
            E::AuthenticationFailure(_) | E::UnauthorizedError { .. } => self.unauthorized(401, &what),
            E::ServerError { code: 401 | 403, .. } => self.unauthorized(401, &what),
            E::ServerError { code: 404, .. } => anyhow!("{what}: not found in the registry {}", self.registry),
            E::ServerError { code, message, .. } => {
                anyhow!("{what}: the registry {} answered HTTP {code}: {}", self.registry, first_line(&message))
            }
            E::RegistryError { envelope, .. } => {
                let codes = &envelope.errors;
                if codes.iter().any(|error| matches!(error.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)) {
                    return self.unauthorized(401, &what);
                }
                let messages: Vec<String> = codes.iter().map(|error| first_line(&error.message).to_owned()).collect();
                anyhow!("{what}: the registry {} refused: {}", self.registry, messages.join("; "))
            }
            E::DigestError(err) => anyhow!("{what}: digest mismatch: {err}; nothing was written"),
            other => anyhow!("{what}: {}", describe_cause(&other)),
        }
    }
}

/// The manifest GET found nothing (HTTP 404).
struct Missing;

/// The environment variable that fixes an artifact's `created` time (seconds
/// since 1970), for reproducible pushes: the same plugin pushed twice is then
/// the same artifact, with the same digest and signatures.
pub const SOURCE_DATE_EPOCH: &str = "SOURCE_DATE_EPOCH";

/// The artifact's `created` time: [`SOURCE_DATE_EPOCH`] when set, else now.
fn created() -> Result<chrono::DateTime<chrono::Utc>> {
    match std::env::var(SOURCE_DATE_EPOCH) {
        Err(std::env::VarError::NotPresent) => Ok(chrono::Utc::now()),
        Ok(text) => {
            text.trim().parse::<i64>().ok().and_then(|seconds| chrono::DateTime::from_timestamp(seconds, 0)).ok_or_else(
                || anyhow!("{SOURCE_DATE_EPOCH} is `{}`, not a number of seconds since 1970", text.escape_debug()),
            )
        }
        Err(std::env::VarError::NotUnicode(_)) => bail!("{SOURCE_DATE_EPOCH} is not a number of seconds since 1970"),
    }
}

/// Checks the artifact is a Wasm component, optionally with a plugin manifest.
fn check_layout(source: &Source, manifest: &OciImageManifest) -> Result<()> {
    let mut wasm = 0;
    let mut toml = 0;
    for layer in &manifest.layers {
        reference::check_digest(&layer.digest).map_err(|why| anyhow!("{source}: a layer's digest: {why}"))?;
        match layer.media_type.as_str() {
            WASM_LAYER => wasm += 1,
            MANIFEST_LAYER => toml += 1,
            other => bail!(
                "{source} is not a Wasm component artifact: it has a layer of type `{other}` (expected one \
                 `{WASM_LAYER}` layer, and optionally a `{MANIFEST_LAYER}` one)"
            ),
        }
    }
    if wasm != 1 || toml > 1 {
        bail!(
            "{source} is not a Wasm component artifact: it has {wasm} `{WASM_LAYER}` layers and {toml} plugin manifests \
             (expected one component, and at most one manifest)"
        );
    }
    Ok(())
}

/// Reads a response body, failing past `limit` bytes.
async fn read_bounded(mut response: reqwest::Response, limit: u64) -> Result<Vec<u8>> {
    if response.content_length().is_some_and(|length| length > limit) {
        bail!("it is larger than {limit} bytes");
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| anyhow!("{}", describe_cause(&err)))? {
        if body.len() as u64 + chunk.len() as u64 > limit {
            bail!("it is larger than {limit} bytes");
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The outer message of an error chain, with its innermost cause when that adds something.
fn describe_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let outer = first_line(&err.to_string()).to_owned();
    let mut innermost = None;
    let mut next = err.source();
    while let Some(source) = next {
        innermost = Some(source);
        next = source.source();
    }
    match innermost.map(|source| first_line(&source.to_string()).to_owned()) {
        Some(inner) if !outer.contains(&inner) => format!("{outer}: {inner}"),
        _ => outer,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

#[cfg(test)]
mod tests;
