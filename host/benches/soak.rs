//! The soak: 100,000 calls through one `Host`, about 5% of them hostile, from
//! 8 concurrent tasks on 2 worker threads. Every good call must return exactly
//! its own expected output, every hostile call must end in its typed outcome,
//! and resident memory must stay flat once the instance pool is warm: from the
//! sample after the first 10,000 calls to the last it may grow by 10% at most.
//!
//! Run with `cargo bench -p toolhost --bench soak` after
//! `bash plugins/build.sh` (`make bench` does both). Good calls: `echo` with a
//! text unique to the call, `sha256` of such a text (checked against the
//! digest computed here) and `calculate` of `i * 3 + 1`. Hostile calls, in
//! turn: a runaway loop (`spin_forever`, out of fuel), a memory bomb
//! (`grow_memory` under 8 MiB), a panic (`panics`, a trap with its message),
//! huge output (`huge_output`, 2 MiB over the 1 MiB limit) and a request to
//! a host it was not granted (`fetch` to a listener on 127.0.0.1, refused
//! before anything is sent). It prints the counts, the call rate, and the
//! resident memory after each 10,000 calls. Figures go to BENCHMARKS.md.

mod common;

use sha2::{Digest, Sha256};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use toolhost::{ByteSize, CallError, CallReport, Config, Host, LimitOverrides, RefusalReason, ToolOutput};

/// Calls in all, unless `TOOLHOST_SOAK_CALLS` says otherwise.
const CALLS: usize = 100_000;
const TASKS: usize = 8;
const SAMPLE_EVERY: usize = 10_000;

/// What the instance pool's slots keep resident between calls: what idle
/// slots hold (wasmtime's own count, memories and tables) plus the pages of
/// slot memory made inaccessible again (`---p` mappings). wasmtime zeroes a
/// slot's pages up to its keep-resident size and keeps them; when the next
/// module in the slot starts with a smaller memory, the pages past it are
/// only protected, not given back, and its count no longer includes them.
fn pool_kib(host: &Host) -> u64 {
    let idle = host
        .engine()
        .pooling_allocator_metrics()
        .map_or(0, |pool| (pool.unused_memory_bytes_resident() + pool.unused_table_bytes_resident()) as u64 / 1024);
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut protected = 0;
    let mut inaccessible = false;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        if let (Some(range), Some(perms)) = (fields.next(), fields.next())
            && range.contains('-')
            && !range.ends_with(':')
        {
            inaccessible = perms == "---p";
        } else if let Some(rest) = line.strip_prefix("Rss:")
            && inaccessible
        {
            protected += rest.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0);
        }
    }
    idle + protected
}

fn copy(from: &Path, names: &[&str], to: &Path) {
    for name in names {
        std::fs::copy(from.join(format!("{name}.wasm")), to.join(format!("{name}.wasm")))
            .unwrap_or_else(|err| panic!("{name}: {err} (run `bash plugins/build.sh` first)"));
    }
}

/// What call `i` is, and how to check its report. `None` from the check is a
/// pass; `Some(why)` a wrong outcome.
fn call_for(i: usize, port: u16) -> (&'static str, String, LimitOverrides, bool) {
    let hostile = i % 20 == 7;
    if hostile {
        return match (i / 20) % 5 {
            0 => {
                ("spin_forever", "{}".to_owned(), LimitOverrides { fuel: Some(5_000_000), ..Default::default() }, true)
            }
            1 => (
                "grow_memory",
                "{}".to_owned(),
                LimitOverrides { memory: Some(ByteSize(8 << 20)), ..Default::default() },
                true,
            ),
            2 => ("panics", "{}".to_owned(), LimitOverrides::default(), true),
            3 => ("huge_output", r#"{"megabytes": 2}"#.to_owned(), LimitOverrides::default(), true),
            _ => ("fetch", format!(r#"{{"url":"http://127.0.0.1:{port}/secret"}}"#), LimitOverrides::default(), true),
        };
    }
    match i % 3 {
        0 => ("echo", format!(r#"{{"text":"call {i}"}}"#), LimitOverrides::default(), false),
        1 => ("sha256", format!(r#"{{"text":"call {i}"}}"#), LimitOverrides::default(), false),
        _ => ("calculate", format!(r#"{{"expression":"{i} * 3 + 1"}}"#), LimitOverrides::default(), false),
    }
}

fn check(i: usize, tool: &str, port: u16, report: &CallReport) -> Option<String> {
    let wrong = || Some(format!("call {i} to {tool}: {:?}", report.outcome));
    match tool {
        "echo" => (report.outcome != Ok(ToolOutput::Text(format!("call {i}")))).then(wrong).flatten(),
        "sha256" => {
            let digest: String =
                Sha256::digest(format!("call {i}").as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect();
            (report.outcome != Ok(ToolOutput::Text(digest))).then(wrong).flatten()
        }
        "calculate" => {
            let expected = (i * 3 + 1) as u64;
            match &report.outcome {
                Ok(ToolOutput::Json(text)) => {
                    let value: serde_json::Value = serde_json::from_str(text).ok()?;
                    (value["result"].as_u64() != Some(expected)).then(wrong).flatten()
                }
                _ => wrong(),
            }
        }
        "spin_forever" => (!matches!(report.outcome, Err(CallError::OutOfFuel { .. }))).then(wrong).flatten(),
        "grow_memory" => (!matches!(report.outcome, Err(CallError::MemoryLimit { .. }))).then(wrong).flatten(),
        "panics" => (!matches!(&report.outcome, Err(CallError::Trap { message }) if message.contains("panicked")))
            .then(wrong)
            .flatten(),
        "huge_output" => (!matches!(report.outcome, Err(CallError::OutputTooLarge { .. }))).then(wrong).flatten(),
        "fetch" => {
            let refused = report.refused.len() == 1
                && report.refused[0].reason == RefusalReason::NotGranted
                && report.refused[0].target == format!("http://127.0.0.1:{port}");
            (!(matches!(report.outcome, Err(CallError::ToolFailed(_))) && refused && report.usage.http_requests == 0))
                .then(|| Some(format!("call {i} to fetch: {:?}, refused {:?}", report.outcome, report.refused)))
                .flatten()
        }
        _ => wrong(),
    }
}

fn main() {
    let calls: usize = std::env::var("TOOLHOST_SOAK_CALLS").ok().and_then(|n| n.parse().ok()).unwrap_or(CALLS);
    let plugins = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins");
    let dir = tempfile::tempdir().unwrap();
    copy(&plugins.join("dist"), &["echo", "hash", "calc", "fetch"], dir.path());
    copy(&plugins.join("dist-test"), &["spin_forever", "grow_memory", "panics", "huge_output"], dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let host = runtime.block_on(async {
        let host = Host::new(Config { cache_dir: Some(cache.path().to_owned()), ..Config::default() }).unwrap();
        host.load_dir(dir.path()).await.unwrap();
        assert!(host.problems().is_empty(), "{:?}", host.problems());
        Arc::new(host)
    });

    println!("## soak: {calls} calls through one Host, {TASKS} concurrent tasks on 2 worker threads\n");
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let (wrong, hostile, typed, samples) = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..TASKS {
            let host = host.clone();
            let next = next.clone();
            let done = done.clone();
            tasks.spawn(async move {
                let (mut wrong, mut hostile, mut typed, mut samples) = (Vec::new(), 0usize, 0usize, Vec::new());
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= calls {
                        break;
                    }
                    let (tool, arguments, limits, is_hostile) = call_for(i, port);
                    let report = host.call(tool, &arguments, &limits).await;
                    match check(i, tool, port, &report) {
                        Some(why) => wrong.push(why),
                        None if is_hostile => typed += 1,
                        None => {}
                    }
                    hostile += usize::from(is_hostile);
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if finished.is_multiple_of(SAMPLE_EVERY) {
                        samples.push((finished, common::resident_kib(), pool_kib(&host)));
                    }
                }
                (wrong, hostile, typed, samples)
            });
        }
        let (mut wrong, mut hostile, mut typed, mut samples) = (Vec::new(), 0, 0, Vec::new());
        while let Some(joined) = tasks.join_next().await {
            let (w, h, t, s) = joined.unwrap();
            wrong.extend(w);
            hostile += h;
            typed += t;
            samples.extend(s);
        }
        samples.sort();
        (wrong, hostile, typed, samples)
    });
    let elapsed = start.elapsed();
    let reached = listener.accept().is_ok();

    println!("| calls | hostile | hostile calls typed as expected | wrong outcomes | calls/s |");
    println!("|------:|--------:|--------------------------------:|---------------:|--------:|");
    println!("| {calls} | {hostile} | {typed} | {} | {:.0} |", wrong.len(), calls as f64 / elapsed.as_secs_f64());
    for why in wrong.iter().take(10) {
        println!("wrong: {why}");
    }
    println!("\nthe refused host received a connection: {reached}");
    println!("\n| after calls | resident memory (MiB) | of it, kept by pool slots (MiB) | the rest (MiB) |");
    println!("|------------:|----------------------:|--------------------------------:|---------------:|");
    for (calls, kib, pool) in &samples {
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!("| {calls} | {:.1} | {:.1} | {:.1} |", mib(*kib), mib(*pool), mib(kib - pool.min(kib)));
    }
    // The first sample is taken once the pool is warm. Pool slots keep what
    // their calls dirtied, up to the keep-resident size each (see
    // BENCHMARKS.md); everything else must not accumulate at all.
    let at = |index: usize| samples.get(index).map(|(_, kib, pool)| (*kib as f64, *pool as f64)).unwrap_or((0.0, 0.0));
    let (first, first_pool) = at(0);
    let (last, last_pool) = at(samples.len().saturating_sub(1));
    let growth = last / first;
    let rest_growth = (last - last_pool) / (first - first_pool);
    let peak = samples.iter().map(|(_, kib, _)| *kib).max().unwrap_or(0) as f64;
    println!(
        "\nfirst to last sample: {:.1} → {:.1} MiB (peak {:.1} MiB); outside pool slots {:.1} → {:.1} MiB",
        first / 1024.0,
        last / 1024.0,
        peak / 1024.0,
        (first - first_pool) / 1024.0,
        (last - last_pool) / 1024.0
    );
    println!();
    println!(
        "target: 0 wrong outputs                measured {}  {}",
        wrong.len(),
        if wrong.is_empty() { "met" } else { "NOT met" }
    );
    println!(
        "target: every hostile call typed       measured {typed}/{hostile}  {}",
        if typed == hostile { "met" } else { "NOT met" }
    );
    println!(
        "target: resident memory flat (last ≤ 1.1x the sample after 10,000 calls)  measured {growth:.2}x  {}",
        if growth <= 1.1 { "met" } else { "NOT met" }
    );
    println!(
        "target: resident memory outside pool slots flat (≤ 1.1x)  measured {rest_growth:.2}x  {}",
        if rest_growth <= 1.1 { "met" } else { "NOT met" }
    );
}
