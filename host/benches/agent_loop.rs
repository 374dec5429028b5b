//! The model loop's own overhead per turn, against an instant scripted
//! OpenAI-compatible server on 127.0.0.1 (streamed responses).
//!
//! Run with `cargo bench -p toolhost --bench agent_loop` after
//! `bash plugins/build.sh`. It prints p50/p99 of a one-turn run (the model
//! answers at once) and of a two-turn run (the model calls `echo`, then
//! answers); the difference is one tool call in its sandbox plus one more
//! model round trip. Figures go to BENCHMARKS.md.

// (model_server.rs allows its own dead code.)
#[path = "../../tests/all/common/model_server.rs"]
mod model_server;

use model_server::{ModelServer, Script};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use toolhost::agent::Agent;
use toolhost::agent::approval::ApproveAll;
use toolhost::agent::events::RunStatus;
use toolhost::agent::model::{ApiKey, Conversation, Endpoint, ModelClient, Protocol, RequestOptions};
use toolhost::{Config, Host};

const RUNS: usize = 300;

fn percentile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist-test");
    assert!(dir.join("echo.wasm").is_file(), "run `bash plugins/build.sh` first");
    let cache = tempfile::tempdir().unwrap();
    let host = runtime.block_on(async {
        let host = Host::new(Config { cache_dir: Some(cache.path().to_owned()), ..Config::default() }).unwrap();
        host.load_dir(&dir).await.unwrap();
        Arc::new(host)
    });
    let script = Script { anthropic: false, stream: true };

    println!("model loop, {RUNS} runs each, instant scripted OpenAI-compatible server, streamed (µs)\n");
    println!("| {:<36} | {:>9} | {:>9} |", "", "p50", "p99");
    println!("|{:-<38}|{:-<11}|{:-<11}|", "", "", "");
    for (name, turn) in [
        ("1 turn: the model answers", vec![script.text("hello")]),
        (
            "2 turns: one echo call, then answer",
            vec![script.calls(&[("c", "echo", r#"{"text":"hi"}"#)]), script.text("done")],
        ),
    ] {
        let responses: Vec<_> = (0..RUNS + 20).flat_map(|_| turn.clone()).collect();
        let server = ModelServer::start(responses);
        let endpoint = Endpoint {
            protocol: Protocol::Openai,
            base_url: format!("{}/v1", server.url),
            model: "bench".into(),
            api_key: Some(ApiKey::new("k")),
        };
        let client = ModelClient::new(endpoint, RequestOptions::default()).unwrap();
        let agent = Agent::new(host.clone(), client, "openai/bench", Arc::new(ApproveAll));
        let cancel = CancellationToken::new();
        let mut samples = runtime.block_on(async {
            let mut samples = Vec::with_capacity(RUNS);
            for i in 0..RUNS + 20 {
                let mut conversation = Conversation::default();
                let start = Instant::now();
                let outcome = agent.run(&mut conversation, "go", &cancel).await;
                let took = start.elapsed();
                assert_eq!(outcome.status, RunStatus::Answered);
                if i >= 20 {
                    samples.push(took);
                }
            }
            samples
        });
        let p50 = percentile(&mut samples, 0.50);
        let p99 = percentile(&mut samples, 0.99);
        println!("| {name:<36} | {p50:>9.1} | {p99:>9.1} |");
    }
}
