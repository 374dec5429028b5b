//! What `toolhost inspect` shows about one file: as much as could be learnt,
//! where loading stopped if it did, and what the plugin asks for and is granted.

use crate::Host;
use crate::plugin::{self, Shape, Tool};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolhost_grants::{self as grants, Grants, Manifest};
use toolhost_runtime::cache::Origin;
use toolhost_runtime::limits::Limits;
use toolhost_runtime::offers::Offers;

/// Everything known about a plugin file.
pub struct Inspection {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes, once read.
    pub size: Option<u64>,
    /// Hex SHA-256, once read.
    pub sha256: Option<String>,
    /// How the component was obtained and how long that took.
    pub compile: Option<(Origin, Duration)>,
    /// The WASI versions and async features it uses, once read.
    pub uses: Option<toolhost_runtime::features::Uses>,
    /// Its imports and exports, once compiled.
    pub shape: Option<Shape>,
    /// The contract version, if it is a plugin.
    pub contract: Option<&'static str>,
    /// The limits its calls would run under.
    pub limits: Limits,
    /// Its tools, if listing them worked.
    pub tools: Vec<Tool>,
    /// Its resources, templates and prompts (contract 0.2.0's `full` world).
    pub offers: Offers,
    /// What its manifest asks for, if it has a valid one.
    pub asks: Option<Manifest>,
    /// What the config grants it.
    pub grants: Grants,
    /// Asks not granted, grants that cannot be honoured, a bad manifest.
    pub notices: Vec<String>,
    /// Why loading stopped, if it did.
    pub error: Option<String>,
}

impl Host {
    /// Loads `path` step by step, recording each step's result.
    pub async fn inspect(&self, path: &Path) -> Inspection {
        let name: std::sync::Arc<str> =
            path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default().into();
        let grants = self.config().grants_for(&name);
        let review = grants::review(&name, path, &grants, |key| std::env::var(key).ok());
        let mut found = Inspection {
            path: path.to_owned(),
            size: None,
            sha256: None,
            compile: None,
            uses: None,
            shape: None,
            contract: None,
            limits: self.limits_for(&name),
            tools: Vec::new(),
            offers: Offers::default(),
            asks: review.asks,
            grants,
            notices: review.notices,
            error: None,
        };
        if let Err(reason) = self.inspect_steps(&name, &mut found).await {
            found.error = Some(reason);
        }
        found
    }

    async fn inspect_steps(&self, name: &std::sync::Arc<str>, found: &mut Inspection) -> Result<(), String> {
        let wasm = plugin::read(&found.path)?;
        found.size = Some(wasm.bytes.len() as u64);
        found.sha256 = Some(wasm.sha256.clone());
        found.uses = Some(toolhost_runtime::features::scan(&wasm.bytes));
        let start = Instant::now();
        let (component, origin) = plugin::compile(self.engine(), self.cache(), self.compiler(), &wasm)
            .await
            .map_err(|err| err.to_string())?;
        found.compile = Some((origin, start.elapsed()));
        found.shape = Some(plugin::shape(self.engine(), &component));
        let contract = toolhost_runtime::contract::detect(self.engine(), &component)?;
        found.contract = Some(contract.version());
        // Listing runs with nothing granted, as at load.
        let bound = self.bound(name, toolhost_grants::Granted::nothing());
        let sandbox = plugin::prepare(self.linker(), &component, contract.version(), bound)?;
        found.tools = if !contract.lists_by_running() {
            let (listed, left_out) = plugin::typed_listing(self.engine(), &component, &wasm.bytes);
            found.notices.extend(left_out);
            plugin::check_tools(listed, &found.limits, contract.version())?
        } else {
            plugin::list_tools(&sandbox, &found.limits, contract.version()).await?
        };
        found.offers = plugin::list_offers(&sandbox, &found.limits).await?;
        Ok(())
    }
}
