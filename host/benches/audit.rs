//! What `[audit]` and `[[hooks]]` cost a call: `Host::call` of the `echo`
//! tool without them, with an audit log (a file, Ed25519), and with the log
//! and one before-hook command, measured in alternating blocks in one
//! process so that drift falls on all alike. The target (issue #41): the
//! log under 5% of a call on the hot path. A hook is a process per call, an
//! operator's choice, and is shown for what it is.
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
    let hooked = format!(
        "{audited}[[hooks]]\nwhen = \"before\"\ncommand = [\"sh\", \"-c\", \"echo '{{\\\"decision\\\":\\\"allow\\\"}}'\"]\n"
    );
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
        let hook = load(config(&hooked), &echo).await;
        let hooked = stats(calls(&hook, HOOKED).await);
        println!(
            "  with [audit] and one before-hook command: p50 {:>8.1?}  mean {:>8.1?} ({HOOKED} calls)",
            hooked.0, hooked.2
        );
    });
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
