//! Compiling a component, bounded in processor time and memory.
//!
//! Cranelift's time and memory grow with what a component holds, and a
//! hostile file can make them grow without end: one function of 6 MiB of
//! straight-line code took 43 s and 3.7 GiB. So a program that calls
//! [`serve_workers`] first thing in `main` (the `toolhost` CLI does) compiles
//! in a child process, the same program started again as a *compile worker*:
//!
//! - the worker limits its own data memory (`RLIMIT_DATA`, which counts the
//!   heap and every private writable mapping) to `compile_memory`, its
//!   processor time (`RLIMIT_CPU`) to a little over `compile_timeout`, and
//!   dies with its parent; it runs in a process group of its own, so a
//!   signal sent to the host's group (Ctrl-C, `docker stop`, systemd) is the
//!   host's to handle, not the worker's;
//! - the parent stops it once it has used `compile_timeout` of processor time
//!   (all its threads together): a busy machine stretches a compile's wall
//!   time, not its processor time, so it never costs a plugin its place. A
//!   worker still running after four times that long in wall time (five
//!   minutes at least) is stopped too, but that failure is the machine's,
//!   never remembered;
//! - one worker runs at a time per [`Compiler`], so several large plugins
//!   compiling at once cannot add up past `compile_memory` (each compile
//!   already uses every core);
//! - the worker hands the artifact back on its standard output, to the
//!   parent alone: nothing another process can write stands between the
//!   compiler and the bytes the parent seals into the cache and loads;
//! - what Cranelift allocated goes away with the worker, so a long-running
//!   host keeps none of the compiler's memory.
//!
//! Only what the plugin's own bytes cause is its fault: a component wasmtime
//! rejects, one over the processor time or memory bound. A worker ended by a
//! signal toolhost did not send for a bound, one that could not start, or the
//! wall-clock backstop is a [`CompileError::Worker`], which the cache never
//! remembers ([`CompileError::remembered`]).
//!
//! A program that does not call [`serve_workers`] (a library user who has
//! not opted in) compiles in its own process, unbounded, as before.

use crate::engine::Flavor;
use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::{Engine, InstanceAllocationStrategy};

use crate::limits::{ByteSize, HumanDuration};

/// How much processor time one compile may take by default. The largest
/// bundled plugins (12–19 MB JavaScript and Python components) take 14–19 s
/// of processor time to compile on 2 cores (BENCHMARKS.md; more cores add
/// some threads' overhead), so this is six times that, and still ends a
/// compile bomb.
pub const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(120);

/// How much data memory one compile may use by default. Compiling the
/// largest bundled plugins needs 0.4–0.6 GiB of data memory, so this is about
/// four times that,
/// and stops a compile bomb (3.7 GiB) long before it hurts the machine.
pub const DEFAULT_COMPILE_MEMORY: u64 = 2 << 30;

/// The largest artifact a worker may hand back (compiled code is a few
/// times the size of the component).
pub const ARTIFACT_LIMIT: u64 = 4 * toolhost_grants::readfile::limits::WASM;

/// How long in wall-clock time a worker may take before it is taken to be
/// stuck (stopped, or starved by the machine): four times `compile_timeout`,
/// and never less than five minutes.
fn wall_backstop(timeout: Duration) -> Duration {
    (timeout * 4).max(Duration::from_secs(300))
}

/// The environment variable that makes a process a compile worker.
const WORKER: &str = "TOOLHOST_COMPILE_WORKER";
/// The worker's memory bound, in bytes.
const WORKER_MEMORY: &str = "TOOLHOST_COMPILE_MEMORY";
/// The worker's processor-time bound, in whole seconds (a backstop: the
/// parent measures it more finely).
const WORKER_CPU: &str = "TOOLHOST_COMPILE_CPU";
/// The engine the artifact is for: `lean` or `full` ([`crate::engine::Flavor`]).
const WORKER_FLAVOR: &str = "TOOLHOST_COMPILE_FLAVOR";
/// The process id of the worker's parent, the host that started it.
const WORKER_PARENT: &str = "TOOLHOST_COMPILE_PARENT";
/// What a worker reports of its own failure at most.
const MAX_REPORT: u64 = 16 << 10;
/// A worker that fails to compile exits with this code, its reason on stderr.
const EXIT_INVALID: i32 = 2;
/// A worker whose own set-up failed exits with this code.
const EXIT_SETUP: i32 = 3;

static WORKERS: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main`. In a process started as a compile worker it
/// compiles the component on standard input, writes the artifact to standard
/// output and exits; in any other it marks the program as able to serve as
/// one, so that every [`Compiler`] compiles in a bounded child process from
/// then on.
pub fn serve_workers() {
    if std::env::var_os(WORKER).is_none() {
        WORKERS.store(true, Ordering::Release);
        return;
    }
    let number = |name| std::env::var(name).ok().and_then(|text| text.parse().ok());
    let parent = std::env::var(WORKER_PARENT).ok().and_then(|text| text.parse().ok());
    std::process::exit(match worker(number(WORKER_MEMORY), number(WORKER_CPU), parent) {
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
/// engine settings every host uses, and writes the artifact to standard output.
fn worker(memory: Option<u64>, cpu: Option<u64>, parent: Option<u32>) -> Result<(), Failure> {
    let setup = |err: anyhow::Error| Failure::Setup(format!("{err:#}"));
    bound_self(memory, cpu, parent).map_err(setup)?;
    let mut wasm = Vec::new();
    std::io::stdin()
        .take(toolhost_grants::readfile::limits::WASM + 1)
        .read_to_end(&mut wasm)
        .context("reading the component")
        .map_err(setup)?;
    let flavor = std::env::var(WORKER_FLAVOR).ok().and_then(|name| Flavor::named(&name)).unwrap_or(Flavor::Full);
    let mut config = crate::engine::config(flavor);
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    let engine =
        Engine::new(&config).map_err(|err| setup(anyhow::Error::from(err).context("setting up the compiler")))?;
    let artifact = engine.precompile_component(&wasm).map_err(|err| Failure::Invalid(format!("{err:#}")))?;
    drop(wasm);
    let mut out = std::io::stdout().lock();
    out.write_all(&artifact).and_then(|()| out.flush()).context("handing the artifact back").map_err(setup)
}

/// Limits this process's data memory to `memory` and its processor time to
/// `cpu` seconds, turns core dumps off and has the kernel kill it when its
/// parent (process `parent`) goes.
fn bound_self(memory: Option<u64>, cpu: Option<u64>, parent: Option<u32>) -> Result<()> {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this process's own settings.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error()).context("asking to end with the parent");
        }
        // The parent may have gone before the request above took hold: the
        // worker then has another parent. (Not "a parent of 1": the host is
        // process 1 when it is a container's first process.)
        if parent.is_some_and(|parent| u32::try_from(libc::getppid()).ok() != Some(parent)) {
            std::process::exit(EXIT_SETUP);
        }
    }
    #[cfg(unix)]
    {
        let set = |resource, soft: u64, hard: u64| {
            let limit = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
            // SAFETY: `setrlimit` reads the struct and changes this process's limit.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        };
        set(libc::RLIMIT_CORE, 0, 0).context("turning core dumps off")?;
        if let Some(memory) = memory {
            set(libc::RLIMIT_DATA, memory, memory).context("limiting the compile's memory")?;
        }
        if let Some(cpu) = cpu {
            // SIGXCPU at the soft limit, SIGKILL at the hard one.
            set(libc::RLIMIT_CPU, cpu, cpu + 2).context("limiting the compile's processor time")?;
        }
    }
    #[cfg(not(unix))]
    let _ = (memory, cpu);
    Ok(())
}

/// The bounds a compile runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileBounds {
    /// Processor time one compile may take (all its threads together).
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
    /// It used more than `compile_timeout` of processor time.
    TimedOut(Duration),
    /// It needed more than `compile_memory`.
    OverMemory(u64),
    /// The worker could not be run, was stopped by something else than its
    /// bounds, or ended some other way: not the plugin's doing.
    Worker(String),
}

/// Whether, and under which settings, a compile failure is remembered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remembered {
    /// Always: the bytes themselves are at fault.
    Always,
    /// While these compile bounds ([`CompileBounds::key`]) hold.
    Under(String),
    /// Never: the machine or a signal is at fault, and the next start tries again.
    Never,
}

impl CompileError {
    /// Whether a cache may remember this failure for the plugin's bytes, and
    /// under which bounds: only what the plugin's own bytes caused.
    pub fn remembered(&self, bounds: &CompileBounds) -> Remembered {
        match self {
            CompileError::Invalid(_) => Remembered::Always,
            CompileError::TimedOut(_) | CompileError::OverMemory(_) => Remembered::Under(bounds.key()),
            CompileError::Worker(_) => Remembered::Never,
        }
    }
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::Invalid(reason) => write!(f, "not a valid component: {reason}"),
            CompileError::TimedOut(timeout) => write!(
                f,
                "compiling it took more than compile_timeout ({}) of processor time; if you trust this plugin, \
                 raise `compile_timeout` in toolhost.toml",
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

    /// Compiles `wasm` for `engine`: the artifact's bytes, as
    /// `Engine::precompile_component` makes them.
    pub fn compile(&self, engine: &Engine, wasm: &[u8]) -> Result<Vec<u8>, CompileError> {
        if !self.bounded() {
            return precompile_here(engine, wasm).map_err(|err| CompileError::Invalid(format!("{err:#}")));
        }
        let _turn = self.turn.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.run_worker(Flavor::of_engine(engine), wasm)
    }

    fn run_worker(&self, flavor: Flavor, wasm: &[u8]) -> Result<Vec<u8>, CompileError> {
        let program =
            this_program().map_err(|err| CompileError::Worker(format!("finding toolhost's program: {err}")))?;
        let cpu_seconds = self.bounds.timeout.as_secs() + 1;
        let mut command = Command::new(program);
        command
            .env_clear()
            .env(WORKER, "1")
            .env(WORKER_MEMORY, self.bounds.memory.to_string())
            .env(WORKER_CPU, cpu_seconds.to_string())
            .env(WORKER_FLAVOR, flavor.name())
            .env(WORKER_PARENT, std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child =
            command.spawn().map_err(|err| CompileError::Worker(format!("starting the compile worker: {err}")))?;
        let started = Instant::now();
        let mut stderr = child.stderr.take().expect("piped");
        let report = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = (&mut stderr).take(MAX_REPORT).read_to_end(&mut text);
            // Keep draining so the worker never blocks on a full pipe.
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            String::from_utf8_lossy(&text).into_owned()
        });
        let mut stdout = child.stdout.take().expect("piped");
        let artifact = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let read = (&mut stdout).take(ARTIFACT_LIMIT + 1).read_to_end(&mut bytes);
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
            read.map(|_| bytes)
        });
        // A worker that died early (over its memory while reading, or a
        // signal) closes the pipe: its exit status says why, not the write error.
        if let Some(stdin) = child.stdin.take() {
            write_without_sigpipe(stdin, wasm);
        }
        let backstop = wall_backstop(self.bounds.timeout);
        let ended = watch(&mut child, self.bounds.timeout, started + backstop);
        let report = report.join().unwrap_or_default();
        let artifact = artifact.join();
        match ended {
            Ended::OverTime => Err(CompileError::TimedOut(self.bounds.timeout)),
            Ended::Stuck => Err(CompileError::Worker(format!(
                "the compile worker was still running after {} of wall-clock time (the machine may be very busy, or \
                 the worker was stopped); it is tried again at the next start",
                HumanDuration(backstop)
            ))),
            Ended::Failed(err) => Err(CompileError::Worker(format!("waiting for the compile worker: {err}"))),
            Ended::Exited(status) => {
                self.judge(status, report.trim())?;
                match artifact {
                    Ok(Ok(bytes)) if bytes.len() as u64 <= ARTIFACT_LIMIT => Ok(bytes),
                    Ok(Ok(_)) => Err(CompileError::Worker(format!(
                        "the compiled plugin is larger than {}",
                        ByteSize(ARTIFACT_LIMIT)
                    ))),
                    Ok(Err(err)) => Err(CompileError::Worker(format!("reading the compiled plugin: {err}"))),
                    Err(_) => Err(CompileError::Worker("reading the compiled plugin failed".to_owned())),
                }
            }
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
                    let signal = status.signal().unwrap_or_default();
                    // Its own processor-time limit, the backstop of the parent's.
                    if signal == libc::SIGXCPU {
                        return Err(CompileError::TimedOut(self.bounds.timeout));
                    }
                    // Anything else (SIGTERM from a `docker stop`, SIGKILL from
                    // the machine's out-of-memory killer) is not the plugin's doing.
                    Err(CompileError::Worker(format!(
                        "the compile worker was ended by signal {signal} (not by a bound of its own); it is tried \
                         again at the next start"
                    )))
                }
                #[cfg(not(unix))]
                Err(CompileError::Worker("the compile worker crashed".to_owned()))
            }
        }
    }
}

/// Writes `bytes` to a worker's standard input and closes it. A program
/// that restores SIGPIPE's default action (as many command-line programs do,
/// to end quietly under `| head`) would be killed by a write to a worker that
/// has already died, so the signal is held back in this thread for the write,
/// and one it raised is taken off again: the write just fails.
fn write_without_sigpipe(mut stdin: std::process::ChildStdin, bytes: &[u8]) {
    #[cfg(unix)]
    // SAFETY: signal masks of this thread only, set and restored around the write.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut before);
        let _ = stdin.write_all(bytes);
        drop(stdin);
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        while libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero) == libc::SIGPIPE {}
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
    }
    #[cfg(not(unix))]
    {
        let _ = stdin.write_all(bytes);
    }
}

/// How a watched worker ended.
enum Ended {
    Exited(ExitStatus),
    /// It used up its processor time: stopped.
    OverTime,
    /// Past the wall-clock backstop: stopped.
    Stuck,
    Failed(std::io::Error),
}

/// Waits for `child`, stopping it once it has used `cpu` of processor time,
/// or at `deadline` in wall-clock time.
fn watch(child: &mut std::process::Child, cpu: Duration, deadline: Instant) -> Ended {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ended::Exited(status),
            Ok(None) => {}
            Err(err) => return Ended::Failed(err),
        }
        let over_time = processor_time(child.id()).is_some_and(|used| used > cpu);
        let now = Instant::now();
        if over_time || now >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return if over_time { Ended::OverTime } else { Ended::Stuck };
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The processor time process `pid` has used, all its threads together
/// (Linux: `/proc/PID/stat`); `None` where it cannot be read.
fn processor_time(pid: u32) -> Option<Duration> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name may hold spaces: fields are counted after its `)`.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // SAFETY: `sysconf` only reads a system setting.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let per_second = u64::try_from(per_second).ok().filter(|&rate| rate > 0)?;
        Some(Duration::from_millis(ticks * 1000 / per_second))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
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
    release_freed_memory();
    artifact
}

/// Asks the allocator to give the memory it holds free back to the system.
/// After each compile, and once more when a folder has loaded: a trim taken
/// while other plugins were still compiling in parallel cannot release what
/// their compilers were still using then.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_plugins_own_failures_are_remembered() {
        let bounds = CompileBounds::default();
        assert_eq!(CompileError::Invalid("bad".into()).remembered(&bounds), Remembered::Always);
        assert_eq!(CompileError::TimedOut(bounds.timeout).remembered(&bounds), Remembered::Under(bounds.key()));
        assert_eq!(CompileError::OverMemory(bounds.memory).remembered(&bounds), Remembered::Under(bounds.key()));
        assert_eq!(CompileError::Worker("signal 15".into()).remembered(&bounds), Remembered::Never);
    }

    #[test]
    fn a_process_processor_time_is_read() {
        let spent = Instant::now();
        let mut x = 0u64;
        while spent.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let used = processor_time(std::process::id()).unwrap();
        assert!(used >= Duration::from_millis(200), "{used:?}");
    }
}
