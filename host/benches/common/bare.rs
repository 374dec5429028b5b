//! Bare wasmtime, the floor `Host::call` is measured against (the `per_call`
//! and `hot_path` benches): the echo component bound to contract 0.2.0,
//! instantiated from an `InstancePre` in an engine whose pooling allocator is
//! configured exactly as toolhost's, and called with nothing else (no fuel,
//! no epochs, no limits, no validation, synchronous).

use toolhost::runtime::engine::Flavor;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config as WasmConfig, Engine, InstanceAllocationStrategy, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use bare::toolhost::plugin::call::{
    Answer, ElicitAnswer, Elicitation, Question, RequestError, Root, SamplingReply, SamplingRequest,
};

pub mod bare {
    wasmtime::component::bindgen!({
        path: "../wit/v0.2.0",
        world: "toolhost:plugin/plugin@0.2.0",
    });
}

pub struct BareState {
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

/// What a running call may ask: echo asks nothing, and the baseline answers nothing.
impl bare::toolhost::plugin::call::Host for BareState {
    fn progress(&mut self, _: f64, _: Option<f64>, _: Option<String>) {}

    fn elicit(&mut self, _: Elicitation) -> Result<ElicitAnswer, RequestError> {
        Err(RequestError::Unsupported("the bare baseline".to_owned()))
    }

    fn sample(&mut self, _: SamplingRequest) -> Result<SamplingReply, RequestError> {
        Err(RequestError::Unsupported("the bare baseline".to_owned()))
    }

    fn roots(&mut self) -> Result<Vec<Root>, RequestError> {
        Err(RequestError::Unsupported("the bare baseline".to_owned()))
    }

    fn ask(&mut self, questions: Vec<(String, Question)>) -> Vec<Result<Answer, RequestError>> {
        questions.iter().map(|_| Err(RequestError::Unsupported("the bare baseline".to_owned()))).collect()
    }
}

/// A bare wasmtime engine configured like the pool of toolhost's engine for
/// `flavor` (echo runs in the lean one), and the echo component ready to
/// instantiate in it. The concurrency support is as that engine has it.
pub fn bare_setup(wasm: &[u8], flavor: Flavor, pagemap: bool) -> (Engine, bare::PluginPre<BareState>) {
    use toolhost::runtime::engine;
    let mut config = WasmConfig::new();
    let max_instances = toolhost::config::DEFAULT_MAX_CONCURRENT_CALLS as u32;
    let pool = match flavor {
        Flavor::Lean => engine::lean_pooling(max_instances, true),
        Flavor::Full => engine::pooling(max_instances, pagemap, engine::MEMORY_KEEP_RESIDENT, true),
    };
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config.concurrency_support(flavor == Flavor::Full);
    let engine = Engine::new(&config).unwrap();
    let component = wasmtime::component::Component::new(&engine, wasm).unwrap();
    let mut linker = Linker::<BareState>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    bare::Plugin::add_to_linker::<BareState, HasSelf<BareState>>(&mut linker, |state| state).unwrap();
    let pre = bare::PluginPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    (engine, pre)
}

/// The arguments of every bare echo call.
pub const ARGS: &str = r#"{"text":"hello, world"}"#;

/// One echo call in a fresh instance, with nothing else.
pub fn bare_call(engine: &Engine, pre: &bare::PluginPre<BareState>) {
    let mut store = Store::new(engine, BareState { wasi: WasiCtx::builder().build(), table: ResourceTable::new() });
    let plugin = pre.instantiate(&mut store).unwrap();
    let out = plugin.toolhost_plugin_tools().call_call_tool(&mut store, "echo", ARGS).unwrap();
    drop(store);
    let blocks = out.expect("echo answers");
    assert!(
        matches!(&blocks[..], [bare::toolhost::plugin::types::Block { content: bare::toolhost::plugin::types::Content::Text(text), .. }] if text == "hello, world")
    );
}
