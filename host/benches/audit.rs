//! What `[audit]` and `[[hooks]]` cost a call: `Host::call` of the `echo`
//! tool without them, with an audit log (a file, Ed25519), and with the log
//! and one before-hook command, measured in alternating blocks in one
//! process so that drift falls on all alike. The target (issue #41): the
//! log under 5% of a call on the hot path. A hook is a process per call, an
//! operator's choice, and is shown for what it is.
//!
//! Then what a line costs the writer's thread (laying it out, signing it,
//! per algorithm), what a call waits under `receipt_in_meta` (its line
//! signed and flushed before it returns), and the host loaded: callers
//! enough to keep both cores busy, calls per second without and with the
//! log, where the writer's signing competes with the calls for the cores.
//!
//! Run with `cargo bench -p toolhost --bench audit` after `bash plugins/build.sh`.
//! Figures go to BENCHMARKS.md; nothing here asserts a time.

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
    let log = dir.path().join("audit.log");
    let audited = format!(
        "[audit]\nfile = {:?}\nkey = {:?}\n",
        log.display().to_string(),
        keys.join("audit.key").display().to_string()
    );
    let receipted = format!("{audited}receipt_in_meta = true\n");
    let hooked = format!(
        "{audited}[[hooks]]\nwhen = \"before\"\ncommand = [\"sh\", \"-c\", \"echo '{{\\\"decision\\\":\\\"allow\\\"}}'\"]\n"
    );
    writer_costs();
    runtime.block_on(async {
        let plain = load(config(""), &echo).await;
        let logged = load(config(&audited), &echo).await;
        let mut without = Vec::new();
        let mut with = Vec::new();
        for _ in 0..BLOCKS {
            without.extend(calls(&plain, BLOCK).await);
            with.extend(calls(&logged, BLOCK).await);
        }
        drop(logged);
        let lines = std::fs::read_to_string(&log).unwrap().lines().count();
        let without = stats(without);
        let with = stats(with);
        println!("Host::call echo, {} calls each, alternating blocks of {BLOCK}:", BLOCK * BLOCKS);
        println!("  without [audit]      p50 {:>8.1?}  p99 {:>8.1?}  mean {:>8.1?}", without.0, without.1, without.2);
        println!("  with [audit] (file)  p50 {:>8.1?}  p99 {:>8.1?}  mean {:>8.1?}", with.0, with.1, with.2);
        let cost = |a: Duration, b: Duration| (a.as_secs_f64() / b.as_secs_f64() - 1.0) * 100.0;
        println!(
            "  audit cost: p50 {:+.1}%  mean {:+.1}%  (target < 5%); {lines} lines written",
            cost(with.0, without.0),
            cost(with.2, without.2)
        );
        let _ = std::fs::remove_file(&log);
        let receipts = load(config(&receipted), &echo).await;
        let mut with_receipt = Vec::new();
        for _ in 0..BLOCKS {
            with_receipt.extend(calls(&receipts, BLOCK / 10).await);
        }
        drop(receipts);
        let with_receipt = stats(with_receipt);
        println!(
            "  with receipt_in_meta     p50 {:>8.1?}  p99 {:>8.1?}  mean {:>8.1?} ({} calls)",
            with_receipt.0,
            with_receipt.1,
            with_receipt.2,
            BLOCK / 10 * BLOCKS
        );
        let _ = std::fs::remove_file(&log);

        // Loaded: CALLERS tasks at once on the two worker threads, while the
        // writer signs on its own; alternating, twice each.
        let mut loaded = [Duration::ZERO; 2];
        for _ in 0..2 {
            let plain = std::sync::Arc::new(load(config(""), &echo).await);
            loaded[0] += concurrent(plain).await;
            let logged = std::sync::Arc::new(load(config(&audited), &echo).await);
            loaded[1] += concurrent(logged.clone()).await;
            drop(logged);
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            let lost = text.lines().filter(|line| line.contains(r#""kind":"lost""#)).count();
            if lost > 0 {
                println!("  (loaded: {lost} `lost` line(s): the writer fell behind)");
            }
        }
        let per = |total: Duration| total / (2 * CALLERS * LOADED) as u32;
        println!(
            "loaded ({CALLERS} callers, {} calls each way): per call without {:>8.1?}, with [audit] {:>8.1?}: {:+.1}%",
            2 * CALLERS * LOADED,
            per(loaded[0]),
            per(loaded[1]),
            cost(loaded[1], loaded[0])
        );

        let hook = load(config(&hooked), &echo).await;
        let hooked = stats(calls(&hook, HOOKED).await);
        println!(
            "  with [audit] and one before-hook command: p50 {:>8.1?}  mean {:>8.1?} ({HOOKED} calls)",
            hooked.0, hooked.2
        );
    });
}

/// What one line costs the writer: laying a typical record out, and
/// signing it with each algorithm.
fn writer_costs() {
    use toolhost::audit::keys::{Algorithm, SigningKey};
    let record = serde_json::json!({
        "kind": "tool", "time": "2026-11-27T12:00:00.123Z", "tool": "echo", "plugin": "echo",
        "source": "plugin", "component": format!("sha256:{}", "5d".repeat(32)),
        "caller": {"path": "serve", "client": "bench", "session": "stdio"},
        "grants": {"http": [], "sockets": false, "env": [], "secrets": [], "dirs": [], "credentials": [],
                   "elicitation": false, "sampling": null, "roots": false},
        "arguments_sha256": "9f".repeat(32), "outcome": {"ok": true},
        "usage": {"fuel": 51234, "memory_peak": 1179648, "wall_us": 812, "http_requests": 0,
                  "http_request_bytes": 0, "http_response_bytes": 0},
    });
    println!("the writer, per line ({SIGNED} lines):");
    for algorithm in [Algorithm::Ed25519, Algorithm::EcdsaP256] {
        let key = SigningKey::from_pkcs8(&SigningKey::generate(algorithm).unwrap()).unwrap();
        let mut prev = toolhost::audit::log::GENESIS.to_owned();
        let start = Instant::now();
        for seq in 1..=SIGNED as u64 {
            let (_, digest) = toolhost::audit::log::seal(record.clone(), seq, &prev, &key);
            prev = digest;
        }
        let sealed = start.elapsed() / SIGNED as u32;
        let line = toolhost::audit::canonical::to_vec(&record);
        let start = Instant::now();
        for _ in 0..SIGNED {
            std::hint::black_box(key.sign(std::hint::black_box(&line)));
        }
        let signed = start.elapsed() / SIGNED as u32;
        println!(
            "  {algorithm:<10} sealed (laid out, signed, hashed) {sealed:>8.1?}, of which the signature {signed:>8.1?}"
        );
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
