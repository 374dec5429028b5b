//! Per-call overhead and start-up time, measured side by side in one run.
//!
//! Run with `cargo bench -p toolhost --bench per_call` after
//! `bash plugins/build.sh`. It prints p50/p99 of:
//! - `native`: the `echo` tool's own function (`plugins/echo/src/core.rs`,
//!   compiled into this benchmark) with its JSON argument parsing;
//! - `bare wasmtime`: instantiate-and-call of `echo.wasm` from an
//!   `InstancePre` with the pooling allocator and nothing else (no fuel, no
//!   epochs, no limits, no validation, synchronous);
//! - `toolhost`: `Host::call` with every limit on and schema validation;
//!
//! and the time to load the bundled plugins with a cold and a warm cache.
//! Figures go to BENCHMARKS.md; nothing here asserts a time.

#[path = "../../plugins/echo/src/core.rs"]
#[allow(dead_code)]
mod echo_core;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolhost::{Config, Host, LimitOverrides, ProblemKind, ToolOutput};
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config as WasmConfig, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

const ITERATIONS: usize = 5_000;
const WARMUP: usize = 500;
const ARGS: &str = r#"{"text":"hello, world"}"#;

mod bare {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "toolhost:plugin/plugin@0.1.0",
    });
}

struct BareState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for BareState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl bare::toolhost::plugin::types::Host for BareState {}

impl bare::toolhost::plugin::log::Host for BareState {
    fn log(&mut self, _: bare::toolhost::plugin::log::Level, _: String, _: Vec<bare::toolhost::plugin::log::Field>) {}
}

fn plugins_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    assert!(dir.join("echo.wasm").is_file(), "run `bash plugins/build.sh` first");
    dir
}

struct Stats {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    Stats { p50: at(0.50), p99: at(0.99), mean }
}

fn row(name: &str, stats: &Stats) {
    println!(
        "| {name:<28} | {:>9.2} | {:>9.2} | {:>9.2} |",
        stats.p50.as_secs_f64() * 1e6,
        stats.p99.as_secs_f64() * 1e6,
        stats.mean.as_secs_f64() * 1e6
    );
}

fn native() -> Stats {
    let mut samples = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        let start = Instant::now();
        let args: echo_core::EchoArgs = serde_json::from_str(std::hint::black_box(ARGS)).unwrap();
        let out = std::hint::black_box(echo_core::echo(args));
        let took = start.elapsed();
        assert_eq!(out, "hello, world");
        if i >= WARMUP {
            samples.push(took);
        }
    }
    stats(samples)
}

fn bare_wasmtime(wasm: &[u8]) -> Stats {
    let mut config = WasmConfig::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(PoolingAllocationConfig::default()));
    let engine = Engine::new(&config).unwrap();
    let component = wasmtime::component::Component::new(&engine, wasm).unwrap();
    let mut linker = Linker::<BareState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    bare::Plugin::add_to_linker::<BareState, HasSelf<BareState>>(&mut linker, |state| state).unwrap();
    let pre = bare::PluginPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    let mut samples = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        let start = Instant::now();
        let mut store =
            Store::new(&engine, BareState { wasi: WasiCtx::builder().build(), table: ResourceTable::new() });
        let plugin = pre.instantiate(&mut store).unwrap();
        let out = plugin.toolhost_plugin_tools().call_call_tool(&mut store, "echo", ARGS).unwrap();
        drop(store);
        let took = start.elapsed();
        assert!(matches!(out, Ok(bare::toolhost::plugin::types::ToolOutput::Text(ref text)) if text == "hello, world"));
        if i >= WARMUP {
            samples.push(took);
        }
    }
    stats(samples)
}

async fn toolhost_call(host: &Host) -> Stats {
    let none = LimitOverrides::default();
    let mut samples = Vec::with_capacity(ITERATIONS);
    for i in 0..WARMUP + ITERATIONS {
        let start = Instant::now();
        let report = host.call("echo", ARGS, &none).await;
        let took = start.elapsed();
        assert_eq!(report.outcome, Ok(ToolOutput::Text("hello, world".to_owned())));
        if i >= WARMUP {
            samples.push(took);
        }
    }
    stats(samples)
}

async fn start_up(dir: &Path, cache: &Path) -> Duration {
    let start = Instant::now();
    let host = Host::new(Config { cache_dir: Some(cache.to_owned()), ..Config::default() }).unwrap();
    host.load_dir(dir).await.unwrap();
    // Grant notices (a bundled plugin asking for access the default config
    // does not grant) are expected; anything else means a plugin did not load.
    let failed: Vec<_> = host.problems().into_iter().filter(|problem| problem.kind != ProblemKind::Grant).collect();
    assert!(failed.is_empty(), "{failed:?}");
    start.elapsed()
}

fn main() {
    let dir = plugins_dir();
    let wasm = std::fs::read(dir.join("echo.wasm")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();

    println!("per-call overhead of the `echo` tool, {ITERATIONS} calls after {WARMUP} warm-up calls (µs)\n");
    println!("| {:<28} | {:>9} | {:>9} | {:>9} |", "", "p50", "p99", "mean");
    println!("|{:-<30}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "");
    let native = native();
    row("native function", &native);
    let bare = bare_wasmtime(&wasm);
    row("bare wasmtime (pooling)", &bare);
    let cache = tempfile::tempdir().unwrap();
    let host = runtime.block_on(async {
        let host = Host::new(Config { cache_dir: Some(cache.path().to_owned()), ..Config::default() }).unwrap();
        host.load_dir(&dir).await.unwrap();
        host
    });
    let toolhost = runtime.block_on(toolhost_call(&host));
    row("toolhost Host::call", &toolhost);
    println!("\ntoolhost p50 / bare wasmtime p50 = {:.2}x", toolhost.p50.as_secs_f64() / bare.p50.as_secs_f64());

    let plugins = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|entry| entry.as_ref().is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "wasm")))
        .count();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..5 {
        let cache = tempfile::tempdir().unwrap();
        cold.push(runtime.block_on(start_up(&dir, cache.path())));
        warm.push(runtime.block_on(start_up(&dir, cache.path())));
    }
    let cold = stats(cold);
    let warm = stats(warm);
    println!("\nstart-up: load {plugins} bundled plugins (median of 5)");
    println!("| cold cache (compile all) | {:>8.1} ms |", cold.p50.as_secs_f64() * 1e3);
    println!("| warm cache               | {:>8.1} ms |", warm.p50.as_secs_f64() * 1e3);
}
