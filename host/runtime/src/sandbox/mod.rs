//! One call in one fresh instance: the store, its limits and what it captured.
//!
//! A [`Sandbox`] is a prepared plugin (a [`Guest`] of some contract) bound to
//! what every call of that plugin shares: its name, its [`Granted`]
//! capabilities, the epoch clock and the TLS settings. Each
//! [`Sandbox::invoke`] builds a new [`Store`] whose WASI context holds exactly
//! those capabilities and nothing else (no files, env or network unless
//! granted; stdout and stderr captured into bounded buffers), routes
//! `wasi:http` through the call's [`Outbound`] checks, meters it with fuel,
//! bounds its memory through a [`ResourceLimiter`](wasmtime::ResourceLimiter)
//! and its wall time through the epoch deadline and a host-side deadline,
//! then classifies whatever happened into a [`CallError`]. Secret values are
//! scrubbed from everything the call hands back.
//!
//! The parts, one idea each: `state` (the store data and the front end's
//! hooks), `asking` (a plugin's questions), `linker` (the imports every
//! plugin gets), `limiter` (memory), `logs` (the log sink), `capture`
//! (stdout and stderr), `verdict` (checking an answer, classifying a trap)
//! and `guest` (the interface each kind of plugin implements, in
//! `crate::contract`).

mod asking;
mod capture;
mod guest;
mod limiter;
pub(crate) mod linker;
pub(crate) mod logs;
mod retire;
mod state;
mod verdict;

pub use capture::CAPTURE_LIMIT;
pub use guest::{Guest, Request, Response, Running};
pub use linker::CONFIG_STORE;
pub use logs::{LOG_MESSAGE_LIMIT, LOG_RECORDS_LIMIT};
pub use state::{CallHooks, HostState, PROGRESS_INTERVAL, Progress, ProgressObserver, ResultShape};

use crate::engine::EpochTicker;
use crate::limits::Limits;
use crate::outbound::{self, Outbound, SharedLedger};
use crate::outcome::{CallError, Effects, LogRecord, Refusal, Usage};
use asking::{Asking, Deadline};
use capture::Capture;
use limiter::MemoryLimiter;
use logs::LogSink;
use state::ProgressSink;
use std::sync::Arc;
use std::time::Instant;
use toolhost_grants::Granted;
use toolhost_grants::files::Access;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};
use wasmtime_wasi_http::WasiHttpCtx;

/// Instructions between two cooperative yields of a busy guest.
pub const FUEL_YIELD_INTERVAL: u64 = 10_000_000;

/// The most component-model handles (resources, and WASI 0.3's tasks,
/// futures and streams) a call may hold at once. Each costs host memory
/// outside the guest's own `memory` limit; wasmtime's default of 100,000 let
/// one call that spawns tasks without end hold about 140 MiB of the host's.
pub const MAX_HANDLES: usize = 10_000;

/// What every call of one plugin shares, fixed when the plugin is prepared.
#[derive(Clone)]
pub struct Bound {
    /// The plugin's name, in logs, spans and refusals.
    pub plugin: Arc<str>,
    /// What its calls may reach (nothing, for listing at load).
    pub granted: Arc<Granted>,
    /// The epoch clock its calls' deadlines run on.
    pub clock: Arc<EpochTicker>,
    /// The TLS settings its HTTPS requests use.
    pub tls: Arc<rustls::ClientConfig>,
}

/// The raw result of one invocation, before output limits are applied.
pub struct Invocation {
    pub result: Result<Response, CallError>,
    pub usage: Usage,
    pub stdout: String,
    pub stderr: String,
    pub logs: Vec<LogRecord>,
    pub refused: Vec<Refusal>,
    pub effects: Effects,
}

/// A plugin ready to be instantiated, with what its calls share.
pub struct Sandbox {
    guest: Arc<dyn Guest>,
    bound: Bound,
    /// Its calls' stores are dropped off the call's path (`retire`): a
    /// [`Flavor::Full`](crate::engine::Flavor::Full) engine's.
    retires: bool,
}

impl Sandbox {
    /// `guest` (from `crate::contract::prepare`), its calls run with `bound`.
    pub fn new(guest: Arc<dyn Guest>, bound: Bound) -> Sandbox {
        let retires = crate::engine::Flavor::of_engine(guest.engine()) == crate::engine::Flavor::Full;
        Sandbox { guest, bound, retires }
    }

    /// The prepared plugin, to bind again (with other grants).
    pub fn guest(&self) -> &Arc<dyn Guest> {
        &self.guest
    }

    /// Whether the plugin offers resources, prompts and completions besides tools.
    pub fn offers_more(&self) -> bool {
        self.guest.offers_more()
    }

    /// Runs `request` in a fresh instance under `limits`; `hooks` is told of
    /// each progress report kept and answers the plugin's questions
    /// (contract 0.2.0).
    pub async fn invoke(&self, limits: &Limits, request: Request<'_>, hooks: CallHooks) -> Invocation {
        let Bound { plugin, granted, clock, tls } = &self.bound;
        let start = Instant::now();
        let deadline = Deadline::new(start + limits.timeout);
        let margin = granted.redactor.longest();
        let stdout = Capture::new(margin);
        let stderr = Capture::new(margin);
        let ledger = SharedLedger::new(plugin.clone(), granted.clone());
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(stdout.clone()).stderr(stderr.clone());
        outbound::configure_sockets(&mut wasi, &granted.network, &ledger);
        if let Err(err) = apply_grants(granted, &mut wasi) {
            return Invocation {
                result: Err(CallError::Host(err)),
                usage: Usage::default(),
                stdout: String::new(),
                stderr: String::new(),
                logs: Vec::new(),
                refused: Vec::new(),
                effects: Effects::default(),
            };
        }
        let state = HostState {
            progress: ProgressSink { observer: hooks.progress, ..ProgressSink::default() },
            asking: Asking::new(hooks.asker, deadline.clone(), granted.requests.sampling.unwrap_or(0)),
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            outbound: Outbound::new(granted.network.clone(), *limits, deadline.get(), ledger.clone(), tls.clone()),
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(limits.memory.bytes()),
            logs: LogSink::new(plugin.clone(), granted.clone()),
        };
        let mut store = Store::new(self.guest.engine(), state);
        store.limiter(|state| &mut state.limiter);
        store.set_max_component_handles(MAX_HANDLES);
        // Bounds what wasmtime copies out of the guest in one transfer (the
        // answer above all), so an oversized answer is refused before it is
        // copied rather than after; `classify` reports it as `OutputTooLarge`.
        let transfer = limits.output.bytes().saturating_add(crate::limits::TRANSFER_SLACK);
        store.set_hostcall_fuel(usize::try_from(transfer).unwrap_or(usize::MAX));
        // Fuel is always configured on our engine, so these cannot fail.
        let _ = store.set_fuel(limits.fuel);
        // Yielding every so many instructions keeps a busy guest from holding
        // an executor thread, and writes its fuel count back to the store, so
        // the usage of a call stopped by the timeout is still accurate.
        let _ = store.fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL));
        store.set_epoch_deadline(1);
        let watched = deadline.clone();
        store.epoch_deadline_callback(move |_| {
            Ok(if Instant::now() >= watched.get() { UpdateDeadline::Interrupt } else { UpdateDeadline::Yield(1) })
        });

        let span = tracing::info_span!(
            "sandbox",
            plugin = %plugin,
            fuel = tracing::field::Empty,
            memory_peak = tracing::field::Empty,
        );
        let outcome = {
            // The epoch clock ticks while any guest may run.
            let _running = clock.running();
            let run = tracing::Instrument::instrument(self.guest.run(&mut store, request), span.clone());
            // The epoch callback stops guest code; this also stops a guest
            // that is blocked in the host (a WASI sleep or poll). Waiting for
            // answers moves the deadline, so it is read again when it passes.
            tokio::pin!(run);
            loop {
                let at = deadline.get();
                tokio::select! {
                    result = &mut run => break Ok(result),
                    () = tokio::time::sleep_until(at.into()) => {
                        if Instant::now() >= deadline.get() {
                            break Err(());
                        }
                    }
                }
            }
        };
        let wall = start.elapsed();
        let fuel = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        let state = store.data_mut();
        let (peak, refused_memory, suspended) = (state.limiter.peak, state.limiter.refused, state.asking.suspended);
        let noted = std::mem::take(&mut state.asking.noted);
        let logs = state.logs.take_records();
        if self.retires {
            retire::retire(store);
        } else {
            drop(store);
        }
        span.record("fuel", i64::try_from(fuel).unwrap_or(i64::MAX));
        span.record("memory_peak", i64::try_from(peak).unwrap_or(i64::MAX));
        let redactor = &granted.redactor;
        let stderr = stderr.text(redactor);
        let stdout = stdout.text(redactor);
        let result = match outcome {
            _ if suspended => Err(CallError::InputRequired),
            Ok(Ok(response)) => verdict::check_response(response, limits, redactor),
            Ok(Err(err)) => {
                Err(verdict::scrub_error(verdict::classify(err, limits, refused_memory, &stderr), redactor))
            }
            Err(()) => Err(CallError::Timeout { limit: limits.timeout }),
        };
        let network = ledger.take();
        let mut refused = network.refused;
        if network.more_refused > 0 {
            note_more_refusals(&mut refused, network.more_refused);
        }
        Invocation {
            result,
            usage: Usage {
                fuel,
                memory_peak: peak,
                wall,
                http_requests: network.requests,
                http_request_bytes: network.request_bytes,
                http_response_bytes: network.response_bytes,
            },
            stdout,
            stderr,
            logs,
            refused,
            effects: Effects {
                hosts: network.contacts,
                more_hosts: network.more_contacts,
                questions: noted.questions,
                more_questions: noted.more,
            },
        }
    }
}

/// Says how many refusals past the kept ones were dropped.
fn note_more_refusals(refused: &mut [Refusal], more: usize) {
    tracing::debug!("{more} more refusals dropped");
    if let Some(last) = refused.last_mut() {
        last.target = format!("{} (and {more} more refusals)", last.target);
    }
}

/// Adds a plugin's granted environment and folders to a call's WASI context.
/// (The network is checked by the `wasi:http` hooks and the socket check.)
fn apply_grants(granted: &Granted, wasi: &mut WasiCtxBuilder) -> Result<(), String> {
    for (name, value) in &granted.env {
        wasi.env(name, value);
    }
    for (name, value) in &granted.secrets {
        wasi.env(name, value.expose());
    }
    for dir in &granted.dirs {
        let perms = match dir.access {
            Access::ReadOnly => FsPerms::ReadOnly,
            Access::ReadWrite => FsPerms::ReadWrite,
        };
        wasi.preopened_dir(&dir.host, &dir.guest, perms).map_err(|err| {
            format!("could not open the granted folder {} (for {}): {err:#}", dir.host.display(), dir.guest)
        })?;
    }
    Ok(())
}
