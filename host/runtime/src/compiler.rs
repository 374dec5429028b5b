//! Compiling a component, bounded in time and memory.
//!
//! Cranelift's time and memory grow with what a component holds, and a
//! hostile file can make them grow without end: one function of 6 MiB of
//! straight-line code took 43 s and 3.7 GiB. So a program that calls
//! [`serve_workers`] first thing in `main` (the `toolhost` CLI does) compiles
//! in a child process, the same program started again as a *compile worker*:
//!
//! - the worker limits its own data memory (`RLIMIT_DATA`, which counts the
//!   heap and every private writable mapping) to `compile_memory` and dies
//!   with its parent;
//! - the parent kills it once `compile_timeout` has passed;
//! - one worker runs at a time per [`Compiler`], so several large plugins
//!   compiling at once cannot add up past `compile_memory` (each compile
//!   already uses every core);
//! - the worker writes its artifact to a file the parent chose (a temporary
//!   name in the compile cache), which the parent renames into place and
//!   memory-maps, so the artifact is never copied through a pipe;
//! - what Cranelift allocated goes away with the worker, so a long-running
//!   host keeps none of the compiler's memory.
//!
//! A program that does not call [`serve_workers`] (a library user who has
//! not opted in) compiles in its own process, unbounded, as before.

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::{Engine, InstanceAllocationStrategy};

use crate::limits::{ByteSize, HumanDuration};

/// How long one compile may take by default. The largest bundled plugins
/// (18–19 MB Python components) compile in 4–7 s on a 2-core machine
/// that is busy with another build, so this leaves room for a slower
/// machine and a larger interpreter, and still ends a compile bomb.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(60);

/// How much data memory one compile may use by default. Compiling the
/// largest bundled plugins needs 0.4–0.6 GiB of data memory, so this is about
/// four times that,
/// and stops a compile bomb (3.7 GiB) long before it hurts the machine.
pub const DEFAULT_COMPILE_MEMORY: u64 = 2 << 30;

/// The environment variable that makes a process a compile worker: the
/// path its artifact is written to.
const WORKER_OUTPUT: &str = "TOOLHOST_COMPILE_WORKER";
/// The worker's memory bound, in bytes.
const WORKER_MEMORY: &str = "TOOLHOST_COMPILE_MEMORY";
/// What a worker reports of its own failure at most.
const MAX_REPORT: u64 = 16 << 10;
/// A worker that fails to compile exits with this code, its reason on stderr.
const EXIT_INVALID: i32 = 2;
/// A worker whose own set-up failed exits with this code.
const EXIT_SETUP: i32 = 3;

static WORKERS: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main`. In a process started as a compile worker it
/// compiles the component on standard input and exits; in any other it
/// marks the program as able to serve as one, so that every [`Compiler`]
/// compiles in a bounded child process from then on.
pub fn serve_workers() {
    let Some(output) = std::env::var_os(WORKER_OUTPUT) else {
        WORKERS.store(true, Ordering::Release);
        return;
    };
    let memory = std::env::var(WORKER_MEMORY).ok().and_then(|text| text.parse().ok());
    std::process::exit(match worker(Path::new(&output), memory) {
        Ok(()) => 0,
        Err(Failure::Invalid(reason)) => {
            eprint!("{reason}");
            EXIT_INVALID
        }
        Err(Failure::Setup(reason)) => {
            eprint!("{reason}");
            EXIT_SETUP
        }
    })
}

enum Failure {
    Invalid(String),
    Setup(String),
}

/// The worker: bounds itself, reads the component, compiles it with the
/// engine settings every host uses, and writes the artifact to `output`.
fn worker(output: &Path, memory: Option<u64>) -> Result<(), Failure> {
    let setup = |err: anyhow::Error| Failure::Setup(format!("{err:#}"));
    bound_self(memory).map_err(setup)?;
    let mut wasm = Vec::new();
    std::io::stdin()
        .take(toolhost_grants::readfile::limits::WASM + 1)
        .read_to_end(&mut wasm)
        .context("reading the component")
        .map_err(setup)?;
    let mut config = crate::engine::config();
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    let engine =
        Engine::new(&config).map_err(|err| setup(anyhow::Error::from(err).context("setting up the compiler")))?;
    let artifact = engine.precompile_component(&wasm).map_err(|err| Failure::Invalid(format!("{err:#}")))?;
    drop(wasm);
    write_new(output, &artifact).map_err(setup)
}

/// Limits this process's data memory to `memory`, turns core dumps off and
/// has the kernel kill it when its parent goes.
fn bound_self(memory: Option<u64>) -> Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this process's own settings.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error()).context("asking to end with the parent");
        }
        // The parent may have gone before the request above took hold.
        if libc::getppid() == 1 {
            std::process::exit(EXIT_SETUP);
        }
    }
    #[cfg(unix)]
    {
        let set = |resource, value: u64| {
            let limit = libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: value as libc::rlim_t };
            // SAFETY: `setrlimit` reads the struct and changes this process's limit.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        };
        set(libc::RLIMIT_CORE, 0).context("turning core dumps off")?;
        if let Some(memory) = memory {
            set(libc::RLIMIT_DATA, memory).context("limiting the compile's memory")?;
        }
    }
    #[cfg(not(unix))]
    let _ = memory;
    Ok(())
}

/// The bounds a compile runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileBounds {
    /// Wall-clock time one compile may take.
    pub timeout: Duration,
    /// Data memory one compile may use, in bytes.
    pub memory: u64,
}

impl Default for CompileBounds {
    fn default() -> CompileBounds {
        CompileBounds { timeout: DEFAULT_COMPILE_TIMEOUT, memory: DEFAULT_COMPILE_MEMORY }
    }
}

impl CompileBounds {
    /// How these bounds are written in a cached failure, so that a plugin
    /// refused under them is tried again under others.
    pub fn key(&self) -> String {
        format!("compile_timeout={} compile_memory={}", HumanDuration(self.timeout), ByteSize(self.memory))
    }
}

/// Why a compile failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// The bytes are not a component wasmtime accepts (wasmtime's reason).
    Invalid(String),
    /// It ran past `compile_timeout`.
    TimedOut(Duration),
    /// It needed more than `compile_memory`.
    OverMemory(u64),
    /// The worker could not be run, or ended some other way.
    Worker(String),
}

impl CompileError {
    /// Whether the failure comes from the bounds (and may pass under others).
    pub fn is_bound(&self) -> bool {
        matches!(self, CompileError::TimedOut(_) | CompileError::OverMemory(_))
    }
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::Invalid(reason) => write!(f, "not a valid component: {reason}"),
            CompileError::TimedOut(timeout) => write!(
                f,
                "compiling it took longer than compile_timeout ({}); if you trust this plugin, raise \
                 `compile_timeout` in toolhost.toml",
                HumanDuration(*timeout)
            ),
            CompileError::OverMemory(memory) => write!(
                f,
                "compiling it needed more than compile_memory ({}); if you trust this plugin, raise \
                 `compile_memory` in toolhost.toml",
                ByteSize(*memory)
            ),
            CompileError::Worker(reason) => write!(f, "could not compile it: {reason}"),
        }
    }
}

impl std::error::Error for CompileError {}

/// Compiles components for one engine: in a bounded worker process when
/// the program serves workers ([`serve_workers`]), else in this process.
#[derive(Debug)]
pub struct Compiler {
    bounds: CompileBounds,
    /// Held while a worker runs: one at a time.
    turn: Mutex<()>,
}

impl Compiler {
    /// A compiler that keeps every compile within `bounds`.
    pub fn new(bounds: CompileBounds) -> Compiler {
        Compiler { bounds, turn: Mutex::new(()) }
    }

    /// The bounds compiles run under.
    pub fn bounds(&self) -> CompileBounds {
        self.bounds
    }

    /// Whether compiles run in a bounded worker (the program called [`serve_workers`]).
    pub fn bounded(&self) -> bool {
        WORKERS.load(Ordering::Acquire)
    }

    /// Compiles `wasm` for `engine` into the file `output` (which must not
    /// exist yet; it is removed again on failure).
    pub fn compile_to(&self, engine: &Engine, wasm: &[u8], output: &Path) -> Result<(), CompileError> {
        if !self.bounded() {
            let artifact = precompile_here(engine, wasm).map_err(|err| CompileError::Invalid(format!("{err:#}")))?;
            return write_new(output, &artifact).map_err(|err| CompileError::Worker(format!("{err:#}")));
        }
        let _turn = self.turn.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let result = self.run_worker(wasm, output);
        if result.is_err() {
            let _ = std::fs::remove_file(output);
        }
        result
    }

    fn run_worker(&self, wasm: &[u8], output: &Path) -> Result<(), CompileError> {
        let program =
            this_program().map_err(|err| CompileError::Worker(format!("finding toolhost's program: {err}")))?;
        let mut child = Command::new(program)
            .env_clear()
            .env(WORKER_OUTPUT, output)
            .env(WORKER_MEMORY, self.bounds.memory.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| CompileError::Worker(format!("starting the compile worker: {err}")))?;
        let started = Instant::now();
        let mut stderr = child.stderr.take().expect("piped");
        let report = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = (&mut stderr).take(MAX_REPORT).read_to_end(&mut text);
            // Keep draining so the worker never blocks on a full pipe.
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            String::from_utf8_lossy(&text).into_owned()
        });
        // A worker that died early (over its memory while reading) closes
        // the pipe: its exit status says why, not the write error.
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(wasm);
        }
        let status = wait(&mut child, started + self.bounds.timeout);
        let report = report.join().unwrap_or_default();
        match status {
            None => Err(CompileError::TimedOut(self.bounds.timeout)),
            Some(Err(err)) => Err(CompileError::Worker(format!("waiting for the compile worker: {err}"))),
            Some(Ok(status)) => self.judge(status, report.trim()),
        }
    }

    /// What a worker's exit means.
    fn judge(&self, status: ExitStatus, report: &str) -> Result<(), CompileError> {
        let out_of_memory = report.contains("memory allocation of")
            || report.contains("Cannot allocate memory")
            || report.contains("out of memory");
        match status.code() {
            Some(0) => Ok(()),
            _ if out_of_memory => Err(CompileError::OverMemory(self.bounds.memory)),
            Some(EXIT_INVALID) => Err(CompileError::Invalid(report.to_owned())),
            Some(code) => Err(CompileError::Worker(format!("the compile worker failed (exit code {code}): {report}"))),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    // Killed by the kernel's OOM killer: out of memory too.
                    if status.signal() == Some(libc::SIGKILL) {
                        return Err(CompileError::OverMemory(self.bounds.memory));
                    }
                    Err(CompileError::Worker(format!(
                        "the compile worker crashed (signal {})",
                        status.signal().unwrap_or_default()
                    )))
                }
                #[cfg(not(unix))]
                Err(CompileError::Worker("the compile worker crashed".to_owned()))
            }
        }
    }
}

/// Waits for `child` until `deadline`; past it kills the child and returns `None`.
fn wait(child: &mut std::process::Child, deadline: Instant) -> Option<std::io::Result<ExitStatus>> {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(Ok(status)),
            Ok(None) => {}
            Err(err) => return Some(Err(err)),
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The program to start as a worker: this very executable (on Linux through
/// `/proc/self/exe`, which still works when the file was replaced since).
fn this_program() -> std::io::Result<PathBuf> {
    if cfg!(target_os = "linux") && Path::new("/proc/self/exe").exists() {
        return Ok(PathBuf::from("/proc/self/exe"));
    }
    std::env::current_exe()
}

/// Compiles `wasm` in this process, with a twin of `engine` that is dropped
/// afterwards (see [`crate::engine::compiler`]), then gives the memory the
/// compiler freed back to the system.
pub(crate) fn precompile_here(engine: &Engine, wasm: &[u8]) -> Result<Vec<u8>> {
    let compiler = crate::engine::compiler(engine)?;
    let artifact = compiler.precompile_component(wasm).map_err(anyhow::Error::from);
    drop(compiler);
    crate::cache::release_freed_memory();
    artifact
}

/// Writes `bytes` to a new file `path`, synced.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| {
        let _ = std::fs::remove_file(path);
        format!("writing {}", path.display())
    })
}
