//! Tokens of the tool list in each model request, with and without tool
//! search, for a folder of 500 tools, counted by a real tokenizer
//! (`tiktoken-rs`, whose BPE ranks ship inside the crate: nothing is
//! downloaded; a dev-dependency of this bench only, never of toolhost).
//!
//! Run with `cargo bench -p toolhost --bench tool_tokens` after
//! `bash plugins/build.sh`. The folder is the one tests/all/run.rs's
//! `many_tools` builds (500 copies of `echo`, renamed and described by their
//! manifests). A scripted OpenAI-compatible server on 127.0.0.1 answers:
//! the model searches for "weather forecast for Paris", calls the tool found
//! (`tool_417`), then answers; every request body is kept, and its `tools`
//! array is counted in o200k_base (GPT-4o and later) and cl100k_base
//! (GPT-4, and a fair stand-in for other BPE vocabularies: Anthropic
//! publishes no tokenizer), beside the loop's own estimate (a quarter of
//! the bytes). Figures go to BENCHMARKS.md.

// (model_server.rs allows its own dead code.)
#[path = "../../tests/all/common/model_server.rs"]
mod model_server;

use model_server::{ModelServer, Script};
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use toolhost::agent::approval::ApproveAll;
use toolhost::agent::model::{ApiKey, Conversation, Endpoint, ModelClient, Protocol, RequestOptions};
use toolhost::agent::{Agent, AgentOptions, SearchMode, ToolSearch};
use toolhost::{Config, Host};

/// The folder of tests/all/run.rs's `many_tools(500)`.
fn many_tools(dir: &Path, count: usize) {
    let echo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist/echo.wasm");
    let echo = std::fs::read(&echo).expect("run `bash plugins/build.sh` first");
    let things = ["invoice", "parcel", "flight", "recipe", "contract", "sensor", "ticket", "song", "patient", "lease"];
    let facts = ["status", "owner", "price", "history", "location", "size", "author", "rating", "deadline", "colour"];
    let verbs = ["Looks up", "Updates", "Lists", "Checks", "Archives"];
    for i in 0..count {
        let plugin = format!("t{i:03}");
        std::fs::write(dir.join(format!("{plugin}.wasm")), &echo).unwrap();
        let description = if i == 417 {
            "The weather forecast for a city, day by day.".to_owned()
        } else {
            format!(
                "{} the {} of a {} (record {i}).",
                verbs[i % verbs.len()],
                facts[(i / verbs.len()) % facts.len()],
                things[(i / 50) % things.len()]
            )
        };
        let manifest = format!("[tools.echo]\nname = \"tool_{i:03}\"\ndescription = \"{description}\"\n");
        std::fs::write(dir.join(format!("{plugin}.toml")), manifest).unwrap();
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let folder = tempfile::tempdir().unwrap();
    many_tools(folder.path(), 500);
    let cache = tempfile::tempdir().unwrap();
    let host = runtime.block_on(async {
        let host = Host::new(Config { cache_dir: Some(cache.path().to_owned()), ..Config::default() }).unwrap();
        host.load_dir(folder.path()).await.unwrap();
        Arc::new(host)
    });
    let o200k = tiktoken_rs::o200k_base().unwrap();
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    let script = Script { anthropic: false, stream: false };

    println!("tool list per model request, 500 tools (tokens)\n");
    println!("| {:<48} | {:>8} | {:>11} | {:>11} |", "request", "estimate", "o200k_base", "cl100k_base");
    println!("|{:-<50}|{:-<10}|{:-<13}|{:-<13}|", "", "", "", "");
    for mode in [SearchMode::Off, SearchMode::Auto] {
        let responses = match mode {
            SearchMode::Off => vec![script.calls(&[("c1", "tool_417", r#"{"text":"sunny"}"#)]), script.text("Sunny.")],
            _ => vec![
                script.calls(&[("s1", "search_tools", r#"{"query":"weather forecast for Paris"}"#)]),
                script.calls(&[("c1", "tool_417", r#"{"text":"sunny"}"#)]),
                script.text("Sunny."),
            ],
        };
        let server = ModelServer::start(responses);
        let endpoint = Endpoint {
            protocol: Protocol::Openai,
            base_url: format!("{}/v1", server.url),
            model: "bench".into(),
            api_key: Some(ApiKey::new("k")),
        };
        let client = ModelClient::new(endpoint, RequestOptions::default()).unwrap();
        let search = ToolSearch { mode, always: vec!["tool_001".to_owned()], ..ToolSearch::default() };
        let options = AgentOptions { tool_search: search, ..AgentOptions::default() };
        let agent = Agent::new(host.clone(), client, "openai/bench", Arc::new(ApproveAll)).with_options(options);
        runtime.block_on(async {
            let mut conversation = Conversation::default();
            agent.run(&mut conversation, "weather in Paris?", &CancellationToken::new()).await;
        });
        for (turn, request) in server.requests().iter().enumerate() {
            let tools = request.body["tools"].to_string();
            let count = request.body["tools"].as_array().map_or(0, Vec::len);
            let label = match (mode, turn) {
                (SearchMode::Off, _) => format!("no search, turn {}: all {count} tools", turn + 1),
                (_, 0) => format!("search, turn 1: {count} tools (search + always)"),
                (_, n) => format!("search, turn {}: {count} tools (after the search)", n + 1),
            };
            println!(
                "| {label:<48} | {:>8} | {:>11} | {:>11} |",
                tools.len() / 4,
                o200k.encode_ordinary(&tools).len(),
                cl100k.encode_ordinary(&tools).len()
            );
        }
    }
}
