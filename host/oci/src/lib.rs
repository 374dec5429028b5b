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
pub mod reference;
pub mod signature;
pub mod store;
pub mod trust;

pub use credentials::Credentials;
pub use keys::{PublicKey, SigningKey};
pub use reference::Source;
pub use signature::{Signer, Verdict};
pub use store::{LOCK_FILE, Lock, Locked};
pub use trust::{Trust, TrustEntry};

use anyhow::{Context, Result, anyhow, bail};
use futures_util::StreamExt;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost_catalog::Host;
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

/// A plugin ready to publish: checked to be a toolhost plugin.
pub struct Publishable {
    /// The plugin's name (its file stem).
    pub name: String,
    /// The component.
    pub wasm: bytes::Bytes,
    /// Its `NAME.toml`, if there is one beside it.
    pub manifest: Option<String>,
    /// What it imports, for the artifact config.
    pub imports: Vec<String>,
    /// What it exports.
    pub exports: Vec<String>,
}

impl Publishable {
    /// Reads `path` (and `NAME.toml` beside it) and checks it is a toolhost plugin.
    pub async fn read(host: &Host, path: &Path) -> Result<Publishable> {
        let name = toolhost_catalog::host::stem(path);
        let wasm = toolhost_catalog::plugin::read(path).map_err(|why| anyhow!("{}: {why}", path.display()))?;
        let (component, _) = toolhost_catalog::plugin::compile(host.engine(), host.cache(), host.compiler(), &wasm)
            .await
            .map_err(|why| anyhow!("{}: {why}", path.display()))?;
        toolhost_catalog::plugin::contract_of(host.engine(), &component)
            .map_err(|why| anyhow!("{}: {why}", path.display()))?;
        let shape = toolhost_catalog::plugin::shape(host.engine(), &component);
        let manifest_path = toolhost_grants::Manifest::path_for(path);
        let manifest = match toolhost_grants::readfile::read_regular_text(&manifest_path, MAX_TOML) {
            Ok(text) => {
                toolhost_grants::Manifest::parse(&text)
                    .map_err(|why| anyhow!("{} is not a valid plugin manifest: {why}", manifest_path.display()))?;
                Some(text)
            }
            Err(err) if err.is_not_found() => None,
            Err(err) => return Err(anyhow!("could not read {}: {err}", manifest_path.display())),
        };
        Ok(Publishable {
            name,
            wasm: bytes::Bytes::from_owner(wasm.bytes),
            manifest,
            imports: shape.imports,
            exports: shape.exports.into_iter().map(|(name, _)| name).collect(),
        })
    }
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullOutcome {
    /// The files were written.
    Written,
    /// The folder already held this digest; nothing was written.
    Unchanged,
}

/// The result of pulling one plugin.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The plugin's name.
    pub name: String,
    /// The artifact's digest.
    pub digest: String,
    /// The `.wasm` written (or already there).
    pub wasm_path: PathBuf,
    /// The manifest written, if the artifact carried one.
    pub manifest_path: Option<PathBuf>,
    /// Whether anything was written.
    pub outcome: PullOutcome,
    /// What the signature check found.
    pub verdict: Verdict,
}

/// Pulls `source` into `dir` as `name` (default: the repository's last
/// segment): verifies every digest and, when a `[[trust]]` scope covers it,
/// its signature, checks the component is a toolhost plugin (compiling it
/// into the host's cache), and writes `NAME.wasm`, `NAME.toml` (when
/// carried) and the lock entry, with the verified signer, atomically. A
/// folder that already holds this digest, verified the same way, is left alone.
pub async fn pull(
    host: &Host,
    source: &Source,
    dir: &Path,
    name: Option<&str>,
    options: &RegistryOptions,
    trust: &Trust,
) -> Result<Pulled> {
    let name = name.unwrap_or_else(|| source.default_name());
    reference::check_plugin_name(name).map_err(|why| anyhow!("{source}: {why}"))?;
    std::fs::create_dir_all(dir).with_context(|| format!("could not create the plugins folder {}", dir.display()))?;
    // One pull at a time per folder, so two never overwrite each other's lock entries.
    let _exclusive = store::lock_folder(dir).await?;
    let lock = Lock::read(dir)?;
    let registry = Registry::connect(source, options).await?;
    let resolved = registry.resolve(source).await?;
    // Checked every time, also for what is already in place: the trust may have changed.
    let verdict = registry.verify(source, &resolved.digest, trust.for_source(source)).await?;
    let wasm_path = dir.join(format!("{name}.wasm"));
    let manifest_path = dir.join(format!("{name}.toml"));
    if let Some(locked) = lock.plugins.get(name)
        && locked.digest == resolved.digest
        && locked.signer.as_ref() == verdict.signer()
        && store::file_has_digest(&wasm_path, &locked.wasm, MAX_WASM)
        && locked.manifest.as_deref().is_none_or(|digest| store::file_has_digest(&manifest_path, digest, MAX_TOML))
    {
        return Ok(Pulled {
            name: name.to_owned(),
            digest: resolved.digest,
            manifest_path: locked.manifest.is_some().then_some(manifest_path),
            wasm_path,
            outcome: PullOutcome::Unchanged,
            verdict,
        });
    }
    let fetched = registry.fetch(source, &resolved).await?;
    check_plugin(host, source, &fetched).await?;
    let mut staged = store::Staged::new(dir);
    if let Some((text, _)) = &fetched.manifest {
        staged.write(&format!("{name}.toml"), text.as_bytes())?;
    } else if let Some(previous) = lock.plugins.get(name).and_then(|locked| locked.manifest.as_deref())
        && store::file_has_digest(&manifest_path, previous, MAX_TOML)
    {
        // The manifest an earlier pull wrote, which the new version no longer has.
        staged.remove(&format!("{name}.toml"));
    }
    staged.write(&format!("{name}.wasm"), &fetched.wasm)?;
    let mut lock = lock;
    lock.plugins.insert(
        name.to_owned(),
        Locked {
            source: source.to_string(),
            digest: fetched.digest.clone(),
            wasm: fetched.wasm_digest.clone(),
            manifest: fetched.manifest.as_ref().map(|(_, digest)| digest.clone()),
            signer: verdict.signer().cloned(),
        },
    );
    store::stage_lock(&mut staged, &lock)?;
    staged.commit()?;
    Ok(Pulled {
        name: name.to_owned(),
        digest: fetched.digest,
        manifest_path: fetched.manifest.is_some().then_some(manifest_path),
        wasm_path,
        outcome: PullOutcome::Written,
        verdict,
    })
}

/// Checks fetched bytes are a toolhost plugin with a valid manifest.
async fn check_plugin(host: &Host, source: &Source, fetched: &Fetched) -> Result<()> {
    toolhost_catalog::plugin::check_header(&fetched.wasm)
        .map_err(|why| anyhow!("{source}: the artifact's component is not usable: {why}; nothing was written"))?;
    let wasm = toolhost_catalog::plugin::WasmFile {
        bytes: fetched.wasm.clone(),
        sha256: fetched.wasm_digest.trim_start_matches("sha256:").to_owned(),
    };
    let (component, _) =
        toolhost_catalog::plugin::compile(host.engine(), host.cache(), host.compiler(), &wasm)
            .await
            .map_err(|why| anyhow!("{source}: the artifact's component is refused: {why}; nothing was written"))?;
    toolhost_catalog::plugin::contract_of(host.engine(), &component)
        .map_err(|why| anyhow!("{source}: the artifact does not hold a toolhost plugin: {why}; nothing was written"))?;
    if let Some((text, _)) = &fetched.manifest {
        toolhost_grants::Manifest::parse(text).map_err(|why| {
            anyhow!("{source}: the artifact's plugin manifest is not valid: {why}; nothing was written")
        })?;
    }
    Ok(())
}

/// Where the plugins folder `dir` differs from what the config's
/// `[plugins.NAME] source`s say it should hold, one sentence each: a source
/// never pulled, pulled from another reference, not the pinned digest,
/// pulled without the signature its `[[trust]]` scope now requires, or a
/// `.wasm` changed since it was pulled. `loaded` is each loaded plugin's name
/// and hex SHA-256 (already computed at load). Nothing when no plugin has a
/// `source`; the lock is read only then. `sources` are the `source`s by plugin name.
pub fn check_sources(
    sources: &BTreeMap<String, Source>,
    dir: &Path,
    loaded: &[(String, String)],
    trust: &Trust,
) -> Vec<String> {
    if sources.is_empty() {
        return Vec::new();
    }
    let lock = match Lock::read(dir) {
        Ok(lock) => lock,
        Err(err) => return vec![format!("{err:#}")],
    };
    let mut notices = Vec::new();
    for (name, source) in sources {
        let Some(locked) = lock.plugins.get(name) else {
            notices.push(format!(
                "{name}: the config's source {source} has not been pulled into {} (run `toolhost pull`)",
                dir.display()
            ));
            continue;
        };
        // Compared in canonical form: a lock written with another spelling of
        // the same reference is the same source.
        if locked.source.parse::<Source>().ok().as_ref() != Some(source) {
            notices.push(format!(
                "{name}: {} holds what was pulled from {}, but the config's source is {source} (run `toolhost pull`)",
                dir.display(),
                locked.source
            ));
        } else if let Some(pinned) = source.digest()
            && pinned != locked.digest
        {
            notices.push(format!(
                "{name}: {} holds {}, not the pinned {pinned} (run `toolhost pull`)",
                dir.display(),
                locked.digest
            ));
        } else if let Some(entry) = trust.for_source(source)
            && entry.require
            && locked.signer.is_none()
        {
            notices.push(format!(
                "{name}: {} holds what was pulled from {source} without a verified signature, but `[[trust]]` for \
                 `{}` requires one (run `toolhost pull`)",
                dir.display(),
                entry.scope
            ));
        }
        match loaded.iter().find(|(loaded, _)| loaded == name) {
            Some((_, sha256)) if format!("sha256:{sha256}") != locked.wasm => notices.push(format!(
                "{name}: {name}.wasm changed since it was pulled from {} (run `toolhost pull` to restore it)",
                locked.source
            )),
            _ => {}
        }
    }
    notices
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIN: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    #[test]
    fn check_sources_names_every_way_a_folder_drifts_from_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let sources: BTreeMap<String, Source> = [
            ("hash", format!("127.0.0.1:5000/hash:1@{PIN}")),
            ("moved", "127.0.0.1:5000/moved:2".to_owned()),
            ("edited", "127.0.0.1:5000/edited:1".to_owned()),
            ("fine", "127.0.0.1:5000/fine:1".to_owned()),
            ("never", "127.0.0.1:5000/never:1".to_owned()),
        ]
        .into_iter()
        .map(|(name, source)| (name.to_owned(), source.parse().unwrap()))
        .collect();
        let entry = |source: &str, digest: &str, wasm: &str| Locked {
            source: source.to_owned(),
            digest: digest.to_owned(),
            wasm: wasm.to_owned(),
            manifest: None,
            signer: None,
        };
        let lock = Lock {
            version: 1,
            plugins: BTreeMap::from([
                ("hash".to_owned(), entry(&format!("127.0.0.1:5000/hash:1@{PIN}"), OTHER, PIN)),
                ("moved".to_owned(), entry("127.0.0.1:5000/moved:1", OTHER, PIN)),
                ("edited".to_owned(), entry("127.0.0.1:5000/edited:1", OTHER, PIN)),
                ("fine".to_owned(), entry("127.0.0.1:5000/fine:1", OTHER, PIN)),
            ]),
        };
        let mut staged = store::Staged::new(dir.path());
        store::stage_lock(&mut staged, &lock).unwrap();
        staged.commit().unwrap();
        let hex = PIN.trim_start_matches("sha256:").to_owned();
        let loaded = [
            ("hash".to_owned(), hex.clone()),
            ("moved".to_owned(), hex.clone()),
            ("edited".to_owned(), OTHER.trim_start_matches("sha256:").to_owned()),
            ("fine".to_owned(), hex),
        ];
        let notices = check_sources(&sources, dir.path(), &loaded, &Trust::default());
        let expected = [
            "edited: edited.wasm changed since it was pulled",
            &format!("hash: {} holds {OTHER}, not the pinned {PIN}", dir.path().display()),
            "moved: ",
            "never: the config's source 127.0.0.1:5000/never:1 has not been pulled",
        ];
        assert_eq!(notices.len(), expected.len(), "{notices:#?}");
        for (notice, expected) in notices.iter().zip(expected) {
            assert!(notice.starts_with(expected), "{notice} / {expected}");
        }
        assert!(
            notices[2].contains("pulled from 127.0.0.1:5000/moved:1, but the config's source is"),
            "{}",
            notices[2]
        );
        assert!(check_sources(&BTreeMap::new(), Path::new("/nonexistent"), &[], &Trust::default()).is_empty());

        // A scope that now requires signatures: the plugins pulled without one are named.
        let trust = Trust::new(vec![TrustEntry {
            scope: "127.0.0.1:5000/fine".parse().unwrap(),
            keys: vec!["acme.pub".into()],
            require: true,
        }])
        .unwrap();
        let notices = check_sources(&sources, dir.path(), &loaded, &trust);
        assert_eq!(notices.len(), expected.len() + 1, "{notices:#?}");
        assert!(
            notices.iter().any(|notice| notice.starts_with("fine: ")
                && notice
                    .contains("without a verified signature, but `[[trust]]` for `127.0.0.1:5000/fine` requires one")),
            "{notices:#?}"
        );
    }
}
