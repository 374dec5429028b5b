//! The imports every plugin, whatever its contract, is linked against: WASI
//! 0.2 and 0.3 with `wasi:http` of both (over one `WasiCtx` and one set of
//! `wasi:http` hooks per call, so both versions reach only what the call's
//! grants allow, through the same checks), with `symlink-at` refused in both
//! and `wasi:config/store` answered from the grants. Each contract adds its
//! own imports on top (`crate::contract::linker`).

use super::HostState;
use toolhost_grants::Granted;
use wasmtime::Engine;
use wasmtime::component::Linker;

/// `wasi:config/store`, in the 0.2.0 draft that Wassette's components (and
/// the components of other hosts with it) import: a plugin's configuration
/// is what it is granted of toolhost's environment (`env` and `secrets` in
/// `[plugins.NAME]`), by name, and nothing else.
pub const CONFIG_STORE: &str = "wasi:config/store@0.2.0-draft";

/// The `wasi:filesystem/types` versions wasmtime-wasi links (plugins built
/// against any 0.2.x, or any 0.3.x, are matched to them).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";
const FILESYSTEM_TYPES_P3: &str = "wasi:filesystem/types@0.3.0";

/// A linker with WASI 0.2 and 0.3, `wasi:http` of both, the symlink refusal
/// and `wasi:config/store`; no contract's imports yet. WASI 0.3 only where
/// the engine has the concurrency support it needs ([`crate::engine::Flavor`]).
pub(crate) fn wasi(engine: &Engine) -> anyhow::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
    if engine.get_concurrency_support() {
        wasmtime_wasi::p3::add_to_linker(&mut linker).map_err(anyhow::Error::from)?;
        wasmtime_wasi_http::p3::add_to_linker(&mut linker).map_err(anyhow::Error::from)?;
    }
    refuse_symlinks(&mut linker)?;
    add_config_store(&mut linker)?;
    Ok(linker)
}

/// `wasi:config/store`'s `error`: its type must match the interface's, but
/// a lookup in the grants cannot fail, so it is never given.
#[allow(dead_code)]
#[derive(wasmtime::component::ComponentType, wasmtime::component::Lift, wasmtime::component::Lower)]
#[component(variant)]
enum ConfigError {
    #[component(name = "upstream")]
    Upstream(String),
    #[component(name = "io")]
    Io(String),
}

fn add_config_store(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    let mut store = linker.instance(CONFIG_STORE).map_err(anyhow::Error::from)?;
    store
        .func_wrap_async("get", |store, (key,): (String,)| {
            let value = configured(store.data().granted()).find(|(name, _)| *name == key).map(|(_, value)| value);
            Box::new(async move { Ok((Ok::<_, ConfigError>(value),)) })
        })
        .map_err(anyhow::Error::from)?;
    store
        .func_wrap_async("get-all", |store, (): ()| {
            let all: Vec<(String, String)> = configured(store.data().granted()).collect();
            Box::new(async move { Ok((Ok::<_, ConfigError>(all),)) })
        })
        .map_err(anyhow::Error::from)?;
    Ok(())
}

/// The (name, value) pairs a plugin's configuration holds: its granted
/// environment variables and secrets.
fn configured(granted: &Granted) -> impl Iterator<Item = (String, String)> + '_ {
    let env = granted.env.iter().map(|(name, value)| (name.clone(), value.clone()));
    env.chain(granted.secrets.iter().map(|(name, value)| (name.clone(), value.expose().to_owned())))
}

/// Replaces `wasi:filesystem`'s `symlink-at` (0.2 and 0.3) with one that
/// always answers `not-permitted`. A symlink a plugin makes in a read-write
/// folder cannot be followed out of it inside the sandbox, but it stays on
/// the host, where any other program that follows it would reach wherever it
/// points.
fn refuse_symlinks(linker: &mut Linker<HostState>) -> anyhow::Result<()> {
    use wasmtime::component::Resource;
    use wasmtime_wasi::p2::bindings::filesystem::types::{Descriptor, ErrorCode};
    use wasmtime_wasi::p3::bindings::filesystem::types::{Descriptor as DescriptorP3, ErrorCode as ErrorCodeP3};
    linker.allow_shadowing(true);
    linker
        .instance(FILESYSTEM_TYPES)
        .and_then(|mut types| {
            types.func_wrap_async(
                "[method]descriptor.symlink-at",
                |_store, (_folder, _target, _link): (Resource<Descriptor>, String, String)| {
                    Box::new(async { Ok((Err::<(), ErrorCode>(ErrorCode::NotPermitted),)) })
                },
            )
        })
        .map_err(anyhow::Error::from)?;
    if !linker.engine().get_concurrency_support() {
        linker.allow_shadowing(false);
        return Ok(());
    }
    linker
        .instance(FILESYSTEM_TYPES_P3)
        .and_then(|mut types| {
            types.func_wrap_concurrent(
                "[method]descriptor.symlink-at",
                |_store, (_folder, _target, _link): (Resource<DescriptorP3>, String, String)| {
                    Box::pin(async { Ok((Err::<(), ErrorCodeP3>(ErrorCodeP3::NotPermitted),)) })
                },
            )
        })
        .map_err(anyhow::Error::from)?;
    linker.allow_shadowing(false);
    Ok(())
}
