//! What a plugin's language costs: size, load time with a cold and a warm
//! compile cache, and per-call time, for one example plugin per language.
//!
//! Run with `cargo bench -p toolhost --bench languages` after
//! `bash plugins/build.sh` (`make bench` does both). For each plugin it
//! prints the file size; the time to load it alone into a new `Host` with an
//! empty cache (compile + instantiate + list-tools; median of 3) and with the
//! cache filled (median of 10); and p50/p99 of `Host::call` on a small call
//! of one of its tools (every limit on, schema validation included), with the
//! fuel and peak memory of that call. Below the table, the Python and
//! JavaScript call times beside their target (p50 ≤ 300 µs). Last, the
//! `keep_resident` trade-off: the Python and JavaScript calls' p50, and the
//! process's resident memory after 16 of their calls ran at once, with the
//! default (16MiB) and with `keep_resident = "0"`. Figures go to
//! BENCHMARKS.md; nothing here asserts a time.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolhost::{Config, Host, LimitOverrides};

const COLD_RUNS: usize = 3;
const WARM_RUNS: usize = 10;
const CALLS: usize = 300;
const WARMUP: usize = 30;

/// (language, plugin, tool, arguments)
const CASES: &[(&str, &str, &str, &str)] = &[
    ("Rust", "echo", "echo", r#"{"text":"hello, world"}"#),
    ("Rust", "calc", "calculate", r#"{"expression":"2^10 + sqrt(16) * 3"}"#),
    ("C", "stats", "describe_numbers", r#"{"numbers":[2,4,4,4,5,5,7,9]}"#),
    ("Python", "units", "convert_units", r#"{"value":5,"from":"km","to":"mi"}"#),
    ("JavaScript", "markup", "fill_template", r#"{"template":"Hi {{name}}!","values":{"name":"Ada"}}"#),
];

fn dist() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    assert!(dir.join("units.wasm").is_file(), "run `bash plugins/build.sh` first");
    dir
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn load(dir: &Path, cache: &Path) -> (Host, Duration) {
    let start = Instant::now();
    let host = Host::new(common::computing(cache)).unwrap();
    host.load_dir(dir).await.unwrap();
    let took = start.elapsed();
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    (host, took)
}

fn ms(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1e3)
}

fn us(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1e6)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dist = dist();
    println!(
        "| language | plugin | size | load, cold cache (ms) | load, warm cache (ms) | call p50 (µs) | call p99 (µs) | fuel per call | memory per call |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut targets = Vec::new();
    for &(language, plugin, tool, args) in CASES {
        let alone = tempfile::tempdir().unwrap();
        let file = format!("{plugin}.wasm");
        std::fs::copy(dist.join(&file), alone.path().join(&file)).unwrap();
        let size = std::fs::metadata(alone.path().join(&file)).unwrap().len();

        let cold: Vec<Duration> = (0..COLD_RUNS)
            .map(|_| {
                let empty = tempfile::tempdir().unwrap();
                runtime.block_on(load(alone.path(), empty.path())).1
            })
            .collect();
        let cache = tempfile::tempdir().unwrap();
        let (mut host, _) = runtime.block_on(load(alone.path(), cache.path()));
        let mut warm = Vec::with_capacity(WARM_RUNS);
        for _ in 0..WARM_RUNS {
            let (loaded, took) = runtime.block_on(load(alone.path(), cache.path()));
            warm.push(took);
            host = loaded;
        }

        let none = LimitOverrides::default();
        let mut samples = Vec::with_capacity(CALLS);
        let mut last = None;
        for i in 0..WARMUP + CALLS {
            let start = Instant::now();
            let report = runtime.block_on(host.call(tool, args, &none));
            let took = start.elapsed();
            assert!(report.outcome.is_ok(), "{tool}: {:?}", report.outcome);
            if i >= WARMUP {
                samples.push(took);
            }
            last = Some(report.usage);
        }
        samples.sort();
        let p50 = samples[samples.len() / 2];
        let p99 = samples[(samples.len() * 99) / 100];
        let usage = last.unwrap();
        if matches!(language, "Python" | "JavaScript") {
            targets.push((language, tool, p50));
        }
        println!(
            "| {language} | {plugin} | {} | {} | {} | {} | {} | {} | {} |",
            toolhost::ByteSize(size),
            ms(median(cold)),
            ms(median(warm)),
            us(p50),
            us(p99),
            usage.fuel,
            toolhost::ByteSize(usage.memory_peak),
        );
    }
    println!();
    for (language, tool, p50) in targets {
        let met = if p50 <= Duration::from_micros(300) { "met" } else { "NOT met" };
        println!("target: {language} call ({tool}) p50 ≤ 300 µs   measured {} µs  {met}", us(p50));
    }
    println!();
    keep_resident(&runtime, &dist);
}

/// What `keep_resident` trades: call time against the memory idle slots hold.
fn keep_resident(runtime: &tokio::runtime::Runtime, dist: &Path) {
    println!(
        "| keep_resident | plugin | call p50 (µs) | resident memory after 16 calls at once, above the host before them |"
    );
    println!("|---|---|---:|---:|");
    for keep in ["16MiB", "0"] {
        for &(_, plugin, tool, args) in CASES.iter().filter(|case| matches!(case.0, "Python" | "JavaScript")) {
            let alone = tempfile::tempdir().unwrap();
            std::fs::copy(dist.join(format!("{plugin}.wasm")), alone.path().join(format!("{plugin}.wasm"))).unwrap();
            let cache = tempfile::tempdir().unwrap();
            let mut config = Config::parse(&format!("keep_resident = \"{keep}\"")).unwrap();
            config.cache_dir = Some(cache.path().to_owned());
            config.cache.enabled = false;
            let none = LimitOverrides::default();
            // Compiled into the cache first, so the host measured loads the artifact.
            runtime.block_on(async { Host::new(config.clone()).unwrap().load_dir(alone.path()).await.unwrap() });
            let host = std::sync::Arc::new(Host::new(config).unwrap());
            runtime.block_on(host.load_dir(alone.path())).unwrap();
            let before = common::resident_kib();
            runtime.block_on(async {
                let calls: Vec<_> = (0..16)
                    .map(|_| {
                        let host = host.clone();
                        tokio::spawn(async move { host.call(tool, args, &LimitOverrides::default()).await })
                    })
                    .collect();
                for call in calls {
                    assert!(call.await.unwrap().outcome.is_ok(), "{tool}");
                }
            });
            let held = common::resident_kib().saturating_sub(before);
            let mut samples: Vec<Duration> = (0..WARMUP + CALLS)
                .map(|_| {
                    let start = Instant::now();
                    let report = runtime.block_on(host.call(tool, args, &none));
                    assert!(report.outcome.is_ok(), "{tool}: {:?}", report.outcome);
                    start.elapsed()
                })
                .skip(WARMUP)
                .collect();
            samples.sort();
            println!("| {keep} | {plugin} | {} | {} MiB |", us(samples[samples.len() / 2]), held / 1024);
        }
    }
}
