//! The one wasmtime [`Engine`] a host uses, and the clock that drives timeouts.
//!
//! Every call gets its own store and instance from the pooling allocator,
//! metered with fuel and interrupted through epochs: a background thread bumps
//! the engine's epoch every [`TICK`], and each store's epoch callback compares
//! the time with the call's deadline.

use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances: the granularity of timeouts and of yielding
/// a busy guest back to the async scheduler.
pub const TICK: Duration = Duration::from_millis(2);

/// Builds the engine. `max_instances` bounds how many instances may be alive
/// at once (the host's concurrency limit plus room for loading).
pub fn build(max_instances: u32) -> Result<Engine> {
    let mut config = Config::new();
    config.consume_fuel(true);
    config.epoch_interruption(true);
    // Instances come from pre-reserved slots, so creating one per call is
    // cheap; memory and table sizes are bounded per call by the store's
    // limiter, so the pool only has to cover the largest allowed size.
    // Slots are virtual address space reserved up front and committed only
    // when used; components from other toolchains (Python, JavaScript) have
    // many core instances and tables, hence the generous ratios.
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(max_instances);
    pool.total_core_instances(max_instances * 32);
    pool.total_memories(max_instances * 4);
    pool.total_tables(max_instances * 16);
    pool.table_elements(100_000);
    pool.total_stacks(max_instances);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).map_err(anyhow::Error::from)
}

/// Advances `engine`'s epoch every [`TICK`] until dropped.
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
}

impl EpochTicker {
    /// Starts the ticker thread.
    pub fn start(engine: &Engine) -> Result<EpochTicker> {
        let stop = Arc::new(AtomicBool::new(false));
        let engine = engine.clone();
        let flag = stop.clone();
        std::thread::Builder::new().name("toolhost-epoch".into()).spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                engine.increment_epoch();
            }
        })?;
        Ok(EpochTicker { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
