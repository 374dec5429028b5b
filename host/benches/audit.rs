//! What `[audit]` and `[[hooks]]` cost a call: `Host::call` of the `echo`
//! tool without them, with an audit log (a file, Ed25519), and with the log
//! and one before-hook command, measured in alternating blocks in one
//! process so that drift falls on all alike. The target (issue #41): the
//! log under 5% of a call on the hot path. A hook is a process per call, an
//! operator's choice, and is shown for what it is.
//!
//! Issue 50 (item 4): every figure for three modes in one run: audit off,
//! every line signed alone (`[audit] batch = 1`, as before) and batch
//! signing (the default: a signed Merkle tree head over up to 256 lines).
//! What a line costs the writer's thread (laying it out, signing it, per
//! algorithm; chaining it and hashing its leaf, with its share of a head),
//! a call's cost idle (one caller), what a call waits under
//! `receipt_in_meta`, and the host saturated: callers enough to keep both
//! cores busy, calls per second, where the writer competes with the calls
//! for the cores (and what it drops when behind).
//!
//! Run with `cargo bench -p toolhost --bench audit` after `bash plugins/build.sh`.
//! Figures go to BENCHMARKS.md; nothing here asserts a time.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};
use toolhost::{Config, Host, LimitOverrides};

const ARGS: &str = r#"{"text":"hello, world"}"#;
const BLOCK: usize = 1_000;
const BLOCKS: usize = 10;
const HOOKED: usize = 200;
const SIGNED: usize = 10_000;
const CALLERS: usize = 8;
const LOADED: usize = 2_000;
const ROUNDS: usize = 3;

fn main() {
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    toolhost::audit::keys::keygen(&keys, toolhost::audit::keys::Algorithm::Ed25519).unwrap();
    let echo = dir.path().join("plugins");
    std::fs::create_dir(&echo).unwrap();
    let source = plugins.join("echo.wasm");
    assert!(source.is_file(), "run `bash plugins/build.sh` first");
    std::fs::copy(&source, echo.join("echo.wasm")).unwrap();
    let cache = dir.path().join("cache");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let config = |text: &str| {
        let parsed = Config::parse(text).unwrap();
        Config { cache_dir: Some(cache.clone()), ..parsed }
    };
    // Batch signing (the default) and every line signed alone (`batch = 1`,
    // as before issue 50), each to its own file (one writer per file).
    let audit = |name: &str, more: &str| {
        format!(
            "[audit]\nfile = {:?}\nkey = {:?}\n{more}",
            dir.path().join(name).display().to_string(),
            keys.join("audit.key").display().to_string()
        )
    };
    let per_line = audit("per-line.log", "batch = 1\n");
    let batched = audit("batched.log", "");
    let files = ["", "per-line.log", "batched.log"].map(|name| dir.path().join(name));
    let modes = [("off", String::new()), ("per-line signing", per_line.clone()), ("batch signing", batched.clone())];
    let hooked = format!(
        "{batched}[[hooks]]\nwhen = \"before\"\ncommand = [\"sh\", \"-c\", \"echo '{{\\\"decision\\\":\\\"allow\\\"}}'\"]\n"
    );
    // `TOOLHOST_BENCH_PROFILE=N`: only N rounds of batch signing saturated,
    // nothing else (for `perf record`).
    if let Some(rounds) = std::env::var("TOOLHOST_BENCH_PROFILE").ok().and_then(|n| n.parse::<usize>().ok()) {
        runtime.block_on(async {
            for _ in 0..rounds {
                let host = std::sync::Arc::new(load(config(&batched), &echo).await);
                let wall = concurrent(host.clone()).await;
                println!("{:.0} calls/s", (CALLERS * LOADED) as f64 / wall.as_secs_f64());
                drop(host);
                let _ = std::fs::remove_file(&files[2]);
            }
        });
        return;
    }
    writer_costs();
    runtime.block_on(async {
        // Idle: one caller, one call at a time, the three modes in alternating blocks.
        let mut hosts = Vec::new();
        for (_, text) in &modes {
            hosts.push(load(config(text), &echo).await);
        }
        let mut samples: [Vec<Duration>; 3] = Default::default();
        for _ in 0..BLOCKS {
            for (index, host) in hosts.iter().enumerate() {
                samples[index].extend(calls(host, BLOCK).await);
            }
        }
        drop(hosts);
        println!("idle: Host::call echo, one caller, {} calls each, alternating blocks of {BLOCK}:", BLOCK * BLOCKS);
        let results = samples.map(stats);
        for (index, (name, _)) in modes.iter().enumerate() {
            let (got, off) = (results[index], results[0]);
            println!(
                "  {name:<17} p50 {:>8.1?}  p99 {:>8.1?}  mean {:>8.1?}  (p50 {:+.1}%, mean {:+.1}% against off)",
                got.0,
                got.1,
                got.2,
                cost(got.0, off.0),
                cost(got.2, off.2)
            );
        }
        for file in &files[1..] {
            let _ = std::fs::remove_file(file);
        }

        // Receipts: what a call waits for its receipt, line by line and batched.
        for (index, (name, text)) in modes.iter().enumerate().skip(1) {
            let host = load(config(&format!("{text}receipt_in_meta = true\n")), &echo).await;
            let mut waited = Vec::new();
            for _ in 0..BLOCKS {
                waited.extend(calls(&host, BLOCK / 10).await);
            }
            drop(host);
            let _ = std::fs::remove_file(&files[index]);
            let waited = stats(waited);
            println!(
                "  with receipt_in_meta, {name:<17} p50 {:>8.1?}  p99 {:>8.1?}  mean {:>8.1?} ({} calls)",
                waited.0,
                waited.1,
                waited.2,
                BLOCK / 10 * BLOCKS
            );
        }

        // Saturated: CALLERS tasks at once on the two worker threads while the
        // writer works on its own thread; the three modes taking turns.
        let mut wall = [Duration::ZERO; 3];
        let mut lost = [0u64; 3];
        let mut written = [0u64; 3];
        let mut writer_cpu = [Duration::ZERO; 3];
        let mut workers_cpu = [Duration::ZERO; 3];
        for _ in 0..ROUNDS {
            for (index, (_, text)) in modes.iter().enumerate() {
                let host = std::sync::Arc::new(load(config(text), &echo).await);
                let writer_before = writer_time();
                let workers_before = thread_time("tokio-rt-worker");
                wall[index] += concurrent(host.clone()).await;
                writer_cpu[index] += writer_time().saturating_sub(writer_before);
                workers_cpu[index] += thread_time("tokio-rt-worker").saturating_sub(workers_before);
                drop(host);
                let text = std::fs::read_to_string(&files[index]).unwrap_or_default();
                let _ = std::fs::remove_file(&files[index]);
                for line in text.lines() {
                    let line: serde_json::Value = serde_json::from_str(line).unwrap();
                    match line["kind"].as_str() {
                        Some("lost") => lost[index] += line["count"].as_u64().unwrap_or(0),
                        Some("tool") => written[index] += 1,
                        _ => {}
                    }
                }
            }
        }
        let total = (ROUNDS * CALLERS * LOADED) as f64;
        let rate = |wall: Duration| total / wall.as_secs_f64();
        println!(
            "saturated: {CALLERS} callers on 2 worker threads, {} calls per mode ({ROUNDS} rounds taking turns):",
            ROUNDS * CALLERS * LOADED
        );
        for (index, (name, _)) in modes.iter().enumerate() {
            let audited = if index == 0 {
                String::new()
            } else {
                format!(
                    "; {} lines written, {} records dropped (writer behind), writer thread {:.1} µs CPU per line",
                    written[index],
                    lost[index],
                    // (less the warm-up's lines, written before the clock started)
                    writer_cpu[index].as_secs_f64() * 1e6
                        / written[index].saturating_sub((ROUNDS * 200) as u64).max(1) as f64
                )
            };
            println!(
                "  {name:<17} {:>9.0} calls/s ({:+.1}% against off){audited}; the calls' threads {:.1} µs CPU per call",
                rate(wall[index]),
                (rate(wall[index]) / rate(wall[0]) - 1.0) * 100.0,
                workers_cpu[index].as_secs_f64() * 1e6 / total
            );
        }

        let hook = load(config(&hooked), &echo).await;
        let hooked = stats(calls(&hook, HOOKED).await);
        println!(
            "with [audit] and one before-hook command: p50 {:>8.1?}  mean {:>8.1?} ({HOOKED} calls)",
            hooked.0, hooked.2
        );
    });
}

fn cost(a: Duration, b: Duration) -> f64 {
    (a.as_secs_f64() / b.as_secs_f64() - 1.0) * 100.0
}

/// The processor time (user and system) the process's `audit-log` threads
/// have used so far, from /proc (clock ticks of 10 ms: read over a long run).
fn writer_time() -> Duration {
    thread_time("audit-log")
}

/// The same for the threads named `name`.
fn thread_time(name: &str) -> Duration {
    let mut time = Duration::ZERO;
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            time += common::cpu_time(&task.path().join("stat"));
        }
    }
    time
}

/// A plugin as the writer describes it: laid out once, as the catalog's are.
struct Described(std::sync::Arc<toolhost::audit::canonical::Object>);

impl toolhost::audit::Origin for Described {
    fn component(&self) -> std::sync::Arc<toolhost::audit::canonical::Object> {
        self.0.clone()
    }

    fn shown(&self, _: &str, value: Option<serde_json::Value>) -> serde_json::Value {
        value.unwrap_or_default()
    }
}

/// What one line costs the writer: laying a typical call's record out (as
/// the catalog hands it over: what the call holds, moved), and signing it
/// with each algorithm.
fn writer_costs() {
    use toolhost::audit::keys::{Algorithm, SigningKey};
    let described = toolhost::audit::Component {
        plugin: Some("echo".to_owned()),
        source: "plugin",
        sha256: Some("5d".repeat(32)),
        grants: Some(serde_json::json!({"http": [], "sockets": false, "env": [], "secrets": [], "dirs": [],
                   "credentials": [], "elicitation": false, "sampling": null, "roots": false})),
        signer: None,
    };
    let origin: std::sync::Arc<dyn toolhost::audit::Origin> =
        std::sync::Arc::new(Described(std::sync::Arc::new(described.lay_out())));
    let record = || toolhost::audit::CallRecord {
        kind: "tool",
        started: std::time::SystemTime::now(),
        caller: toolhost::audit::Caller {
            path: "serve",
            subject: None,
            client: Some("bench".to_owned()),
            session: Some("stdio".to_owned()),
        },
        name: "echo".to_owned(),
        origin: Some(origin.clone()),
        arguments: ARGS.to_owned(),
        hooks: Vec::new(),
        outcome: Ok(()),
        usage: toolhost::Usage {
            fuel: 51_234,
            memory_peak: 1_179_648,
            wall: Duration::from_micros(812),
            ..Default::default()
        },
        refused: Vec::new(),
        effects: Default::default(),
        cached: None,
        result: Some(serde_json::json!({"content": [{"type": "text", "text": "hello, world"}], "isError": false})),
    };
    println!("the writer, per line ({SIGNED} lines):");
    for algorithm in [Algorithm::Ed25519, Algorithm::EcdsaP256] {
        let key = SigningKey::from_pkcs8(&SigningKey::generate(algorithm).unwrap()).unwrap();
        let mut prev = toolhost::audit::log::GENESIS.to_owned();
        let start = Instant::now();
        for seq in 1..=SIGNED as u64 {
            let (_, digest) = toolhost::audit::log::seal(&mut record().lay_out(false), seq, &prev, &key);
            prev = digest;
        }
        let sealed = start.elapsed() / SIGNED as u32;
        let line = record().lay_out(false).to_vec();
        let start = Instant::now();
        for _ in 0..SIGNED {
            std::hint::black_box(key.sign(std::hint::black_box(&line)));
        }
        let signed = start.elapsed() / SIGNED as u32;
        println!(
            "  {algorithm:<10} sealed (laid out, signed, hashed) {sealed:>8.1?}, of which the signature {signed:>8.1?}"
        );
        // Batched: chained and hashed as a leaf, a head (tree and signature) every 256 lines.
        let batch = toolhost::audit::head::DEFAULT_BATCH;
        let mut prev = toolhost::audit::log::GENESIS.to_owned();
        let mut leaves = Vec::with_capacity(batch);
        let start = Instant::now();
        for seq in 1..=SIGNED as u64 {
            let (line, digest) = toolhost::audit::head::plain(&mut record().lay_out(false), seq, &prev);
            leaves.push(toolhost::audit::merkle::leaf(&line));
            prev = digest;
            if leaves.len() == batch {
                let tree = toolhost::audit::merkle::Tree::new(std::mem::take(&mut leaves));
                let (_, digest) = toolhost::audit::head::seal(seq + 1, &prev, &tree, &prev, &key);
                prev = digest;
            }
        }
        let batched = start.elapsed() / SIGNED as u32;
        println!("  {algorithm:<10} batched (laid out, hashed, its share of a head per {batch}) {batched:>8.1?}");
    }
}

/// CALLERS tasks making LOADED calls each at once: the wall time.
async fn concurrent(host: std::sync::Arc<Host>) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let host = host.clone();
            tokio::spawn(async move {
                for _ in 0..LOADED {
                    host.call("echo", ARGS, &LimitOverrides::default()).await.outcome.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    start.elapsed()
}

async fn load(config: Config, dir: &Path) -> Host {
    let host = Host::new(config).unwrap();
    host.load_dir(dir).await.unwrap();
    for _ in 0..200 {
        host.call("echo", ARGS, &LimitOverrides::default()).await.outcome.unwrap();
    }
    host
}

async fn calls(host: &Host, count: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let start = Instant::now();
        let report = host.call("echo", ARGS, &LimitOverrides::default()).await;
        samples.push(start.elapsed());
        report.outcome.unwrap();
    }
    samples
}

/// p50, p99, mean.
fn stats(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    (at(0.5), at(0.99), mean)
}
