//! The one wasmtime [`Engine`] a host uses, and the clock that drives timeouts.
//!
//! Every call gets its own store and instance from the pooling allocator,
//! metered with fuel and interrupted through epochs: while at least one call
//! runs, a background thread bumps the engine's epoch every [`TICK`], and each
//! store's epoch callback compares the time with the call's deadline. With no
//! call running the thread sleeps until the next call starts, so an idle host
//! costs no CPU.

use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::Duration;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances while calls run: the granularity of timeouts
/// and of yielding a busy guest back to the async scheduler.
pub const TICK: Duration = Duration::from_millis(2);

/// Bytes of each linear memory slot kept resident between calls when the
/// kernel has `PAGEMAP_SCAN` (Linux 6.7 and later): only the pages a call
/// actually wrote are reset, by copying, up to this many bytes, and the rest
/// is given back with `madvise`. Each slot then holds only what its plugin
/// dirties — tens of KiB for a small Rust tool, about 13 MiB for a Python or
/// JavaScript interpreter's heap — and never more than this.
pub const MEMORY_KEEP_RESIDENT: usize = 16 << 20;

/// Bytes of each table slot kept resident between calls (the same scheme).
pub const TABLE_KEEP_RESIDENT: usize = 1 << 20;

/// Without `PAGEMAP_SCAN`, wasmtime resets the first `keep_resident` bytes
/// of a slot with `memset` whether or not they were written, so a large
/// setting would cost every call; this prefix covers a small tool's stack
/// and data and leaves the rest to `madvise`.
pub const PREFIX_KEEP_RESIDENT: usize = 64 << 10;

/// wasmtime gives a pool one lock per core for its slot bookkeeping only from
/// this many slots up; below it, every call on every core takes the same
/// lock (two cores then did 1.21x one core's calls, 1.55x with it). The
/// memory and stack pools get at least this many slots: the extra ones are
/// address space only (about 4 GiB reserved per memory slot), never touched
/// unless used.
const SHARDED_SLOTS: u32 = 128;

/// The pooling allocator's settings for a host that runs at most
/// `max_instances` calls at once, with dirty-page tracking (`pagemap`) or
/// without. `concurrent`: calls run on every core at once, so the memory
/// and stack pools get [`SHARDED_SLOTS`] at least (a process that makes one
/// call, `toolhost call`, saves setting up and tearing down the spare
/// stacks' guard pages). Public so that benchmarks can configure a bare wasmtime engine
/// exactly the same way.
///
/// Instances come from pre-reserved slots, so creating one per call is cheap;
/// memory and table sizes are bounded per call by the store's limiter, so the
/// pool only has to cover the largest allowed size. Slots are virtual address
/// space reserved up front and committed only when used; components from
/// other toolchains (Python, JavaScript) have many core instances and tables,
/// hence the generous ratios. Memory and tables stay resident between calls
/// and only their dirty pages are reset (see [`MEMORY_KEEP_RESIDENT`]): a
/// fresh instance then costs neither `madvise` (with its TLB shootdowns, which
/// made two worker threads slower than one) nor page faults on its first
/// touches. Slots stay affine to the module that last used them, so a
/// plugin's calls keep finding their memory image mapped; at most
/// `max_instances` unused slots keep memory for a module, which bounds what
/// idle slots hold to about `max_instances × MEMORY_KEEP_RESIDENT`.
///
/// `keep_resident` is the bytes of each memory slot kept between calls with
/// dirty-page tracking (the `keep_resident` setting; [`MEMORY_KEEP_RESIDENT`]
/// by default): less holds less memory in idle slots, and costs Python and
/// JavaScript calls their heap's page faults again.
pub fn pooling(max_instances: u32, pagemap: bool, keep_resident: usize, concurrent: bool) -> PoolingAllocationConfig {
    let least = if concurrent { SHARDED_SLOTS } else { 1 };
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(max_instances);
    pool.total_core_instances(max_instances * 32);
    pool.total_memories((max_instances * 4).max(least));
    pool.total_tables(max_instances * 16);
    pool.table_elements(100_000);
    pool.total_stacks(max_instances.max(least));
    pool.max_unused_warm_slots(max_instances);
    if pagemap {
        pool.pagemap_scan(Enabled::Yes);
        pool.linear_memory_keep_resident(keep_resident);
        pool.table_keep_resident(TABLE_KEEP_RESIDENT);
    } else {
        pool.pagemap_scan(Enabled::No);
        pool.linear_memory_keep_resident(PREFIX_KEEP_RESIDENT);
        pool.table_keep_resident(PREFIX_KEEP_RESIDENT);
    }
    pool
}

/// Which of a host's two engines a component runs in. wasmtime decides per
/// engine, not per call, whether stores carry the component model's
/// concurrency support (what WASI 0.3 and `async func` exports need), and
/// with it every call takes the concurrent path (about 12 µs more per call
/// than a plain fiber call, BENCHMARKS.md); and since wasmtime 50 the
/// dirty-page scan counts never-touched pages as written, so a small memory
/// is reset fastest by zeroing it whole without scanning. Hence:
/// - [`Flavor::Lean`]: no concurrency support, and each memory reset by
///   zeroing its first [`LEAN_KEEP_RESIDENT`] bytes (no scan), the rest
///   given back. For components of the synchronous ABI on WASI 0.2 whose
///   memories start small: most Rust, C, Go tools.
/// - [`Flavor::Full`]: concurrency support and the dirty-page scan, keeping
///   up to `keep_resident` bytes. For WASI 0.3 and async components, and
///   large memories (the Python and JavaScript interpreters' heaps).
///
/// The flavor is read from the component's bytes ([`Flavor::of`]), the same
/// way in the host and in a compile worker; artifacts of the two are cached
/// apart (the engine's compatibility hash differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// No concurrency support; memories reset by zeroing a prefix.
    Lean,
    /// Concurrency support; memories reset by the dirty-page scan.
    Full,
}

/// A lean component's memories start at most this large, and this much of
/// each is zeroed in place after a call (the rest is given back).
pub const LEAN_KEEP_RESIDENT: usize = 2 << 20;

impl Flavor {
    /// The flavor for a component that uses `uses`: lean unless it needs the
    /// concurrency support or starts with a memory larger than
    /// [`LEAN_KEEP_RESIDENT`].
    pub fn of(uses: &crate::features::Uses) -> Flavor {
        let synchronous =
            uses.synchronous && uses.async_features.is_empty() && uses.wasi.iter().all(|version| version != "0.3");
        let small = uses.largest_memory.is_some_and(|bytes| bytes <= LEAN_KEEP_RESIDENT as u64);
        if synchronous && small { Flavor::Lean } else { Flavor::Full }
    }

    /// The flavor `engine` was built for.
    pub fn of_engine(engine: &Engine) -> Flavor {
        if engine.get_concurrency_support() { Flavor::Full } else { Flavor::Lean }
    }

    /// The flavor of the component in `wasm` (see [`Flavor::of`]).
    pub fn of_wasm(wasm: &[u8]) -> Flavor {
        Flavor::of(&crate::features::scan(wasm))
    }

    /// Its name, as `inspect` shows it and a compile worker is told it.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Lean => "lean",
            Flavor::Full => "full",
        }
    }

    /// The flavor called `name` ([`Flavor::name`]).
    pub fn named(name: &str) -> Option<Flavor> {
        [Flavor::Lean, Flavor::Full].into_iter().find(|flavor| flavor.name() == name)
    }
}

/// The engine's settings apart from the allocator: fuel and epochs on, and
/// the component model's concurrency support for [`Flavor::Full`] only.
pub fn config(flavor: Flavor) -> Config {
    let mut config = Config::new();
    config.consume_fuel(true);
    config.epoch_interruption(true);
    config.concurrency_support(flavor == Flavor::Full);
    config
}

/// Stores of full-engine calls alive at once, at most, after their calls
/// ended (dropped off the call's path by `sandbox::retire`): the full
/// engine's pool has this many slots more than the calls it runs.
pub const RETIRING: u32 = 2;

/// The pool of a [`Flavor::Lean`] engine: as [`pooling`] without the
/// dirty-page scan, zeroing the first [`LEAN_KEEP_RESIDENT`] bytes of each
/// memory after a call.
pub fn lean_pooling(max_instances: u32, concurrent: bool) -> PoolingAllocationConfig {
    let mut pool = pooling(max_instances, false, PREFIX_KEEP_RESIDENT, concurrent);
    pool.linear_memory_keep_resident(LEAN_KEEP_RESIDENT);
    pool
}

/// A host's two engines (see [`Flavor`]).
#[derive(Clone)]
pub struct Engines {
    /// For components of the synchronous ABI with small memories.
    pub lean: Engine,
    /// For every other component, and for looking at any component.
    pub full: Engine,
    /// Whether the full engine resets memories with the dirty-page scan
    /// (the kernel has `PAGEMAP_SCAN`), or a prefix.
    pub pagemap: bool,
}

/// Builds a host's engines. `max_instances` bounds how many instances may
/// be alive at once in each (the host's concurrency limit plus room for
/// loading); `concurrent` as for [`pooling`]. The full engine uses
/// dirty-page tracking where the kernel has it and falls back to the prefix
/// reset where it does not, and has [`RETIRING`] slots more: its calls'
/// stores are dropped off the call's path, so that many may still hold a
/// slot while as many calls as allowed run.
pub fn build(max_instances: u32, keep_resident: usize, concurrent: bool) -> Result<Engines> {
    let mut lean = config(Flavor::Lean);
    lean.allocation_strategy(InstanceAllocationStrategy::Pooling(lean_pooling(max_instances, concurrent)));
    let lean = Engine::new(&lean).map_err(reserve_hint)?;
    let max_instances = max_instances.saturating_add(RETIRING);
    let mut with_pagemap = config(Flavor::Full);
    with_pagemap.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(
        max_instances,
        true,
        keep_resident,
        concurrent,
    )));
    if let Ok(full) = Engine::new(&with_pagemap) {
        return Ok(Engines { lean, full, pagemap: true });
    }
    let mut without = config(Flavor::Full);
    let keep_prefix = keep_resident.min(PREFIX_KEEP_RESIDENT);
    without.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(
        max_instances,
        false,
        keep_prefix,
        concurrent,
    )));
    let full = Engine::new(&without).map_err(reserve_hint)?;
    Ok(Engines { lean, full, pagemap: false })
}

/// An engine that could not be made, with what to do when it could not
/// reserve its pool's address space.
fn reserve_hint(err: wasmtime::Error) -> anyhow::Error {
    let hint = format!("{err:#}").contains("reserve");
    let err = anyhow::Error::from(err);
    if !hint {
        return err;
    }
    err.context(
        "the instance pool reserves about 4 GiB of address space per memory slot (memory is committed \
         only as calls use it); run toolhost without an address-space limit (`ulimit -v unlimited`) \
         and limit its memory another way, such as a container memory limit",
    )
}

/// A throwaway engine with `engine`'s settings, for compiling only: its
/// artifacts load into `engine` (the allocation strategy is not part of what
/// an artifact depends on). Cranelift keeps the scratch buffers of the
/// functions it compiled in its engine for reuse, hundreds of MiB after an
/// interpreter's component; compiling with a twin that is dropped afterwards
/// gives them back, so a long-running host that compiled at start does not
/// keep compiler memory. A plugin compiles on every core.
pub fn compiler(engine: &Engine) -> Result<Engine> {
    let mut config = engine.config().clone();
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    Engine::new(&config).map_err(anyhow::Error::from)
}

/// Advances the engines' epochs every [`TICK`] while at least one call holds a
/// [`Running`] guard, and sleeps otherwise. Stops when dropped.
pub struct EpochTicker {
    shared: Arc<Shared>,
    thread: Thread,
}

struct Shared {
    running: AtomicUsize,
    stop: AtomicBool,
    ticks: AtomicU64,
}

/// Keeps the epoch clock ticking until dropped: held by each call for as long
/// as its guest may run.
pub struct Running<'a> {
    shared: &'a Shared,
}

impl EpochTicker {
    /// Starts the ticker thread (asleep until the first call), for every
    /// engine in `engines`.
    pub fn start(engines: &[Engine]) -> Result<EpochTicker> {
        let shared =
            Arc::new(Shared { running: AtomicUsize::new(0), stop: AtomicBool::new(false), ticks: AtomicU64::new(0) });
        let engines = engines.to_vec();
        let state = shared.clone();
        let handle = std::thread::Builder::new().name("toolhost-epoch".into()).spawn(move || {
            while !state.stop.load(Ordering::Acquire) {
                if state.running.load(Ordering::Acquire) == 0 {
                    // A wake-up token left by `unpark` makes this return at
                    // once, so a call starting between the check and here is
                    // never missed.
                    std::thread::park();
                    continue;
                }
                std::thread::sleep(TICK);
                for engine in &engines {
                    engine.increment_epoch();
                }
                state.ticks.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        Ok(EpochTicker { shared, thread: handle.thread().clone() })
    }

    /// Marks a call as running: the clock ticks until the guard is dropped.
    pub fn running(&self) -> Running<'_> {
        if self.shared.running.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Running { shared: &self.shared }
    }

    /// How many times the clock has ticked so far.
    pub fn ticks(&self) -> u64 {
        self.shared.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.shared.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_synchronous_wasi_0_2_components_run_lean() {
        use crate::features::Uses;
        let small = Uses {
            wasi: vec!["0.2".to_owned()],
            async_features: Vec::new(),
            synchronous: true,
            largest_memory: Some(1_114_112),
        };
        assert_eq!(Flavor::of(&small), Flavor::Lean);
        assert_eq!(
            Flavor::of(&Uses { largest_memory: Some(LEAN_KEEP_RESIDENT as u64), ..small.clone() }),
            Flavor::Lean
        );
        let full = [
            Uses { largest_memory: Some(LEAN_KEEP_RESIDENT as u64 + 65_536), ..small.clone() },
            Uses { largest_memory: None, ..small.clone() },
            Uses { synchronous: false, ..small.clone() },
            Uses { async_features: vec!["futures"], ..small.clone() },
            Uses { wasi: vec!["0.2".to_owned(), "0.3".to_owned()], ..small.clone() },
            Uses::default(),
        ];
        for uses in full {
            assert_eq!(Flavor::of(&uses), Flavor::Full, "{uses:?}");
        }
    }

    #[test]
    fn each_engine_has_the_concurrency_support_of_its_flavor() {
        let engines = build(2, MEMORY_KEEP_RESIDENT, false).unwrap();
        assert_eq!(Flavor::of_engine(&engines.lean), Flavor::Lean);
        assert_eq!(Flavor::of_engine(&engines.full), Flavor::Full);
        for flavor in [Flavor::Lean, Flavor::Full] {
            assert_eq!(Flavor::named(flavor.name()), Some(flavor));
        }
    }

    #[test]
    fn the_clock_ticks_only_while_a_call_runs() {
        let engines = build(2, MEMORY_KEEP_RESIDENT, true).unwrap();
        let ticker = EpochTicker::start(&[engines.lean, engines.full]).unwrap();
        std::thread::sleep(TICK * 10);
        assert_eq!(ticker.ticks(), 0, "an idle host does not tick");
        let running = ticker.running();
        let second = ticker.running();
        std::thread::sleep(TICK * 20);
        assert!(ticker.ticks() > 0, "a running call makes it tick");
        drop(running);
        drop(second);
        std::thread::sleep(TICK * 5);
        let stopped_at = ticker.ticks();
        std::thread::sleep(TICK * 20);
        assert_eq!(ticker.ticks(), stopped_at, "it stops again once no call runs");
    }
}
