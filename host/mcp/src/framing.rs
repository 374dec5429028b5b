//! A JSON-RPC framing layer in front of rmcp on stdio, so that every message
//! that carries an id gets exactly one answer, whatever the input.
//!
//! rmcp drops what it cannot read without a word (an over-long line, JSON
//! nested past serde's depth limit, unparsable input) and answers a message
//! of the wrong shape without its id; a client waiting on any of them waits
//! for ever. Here each line is read first (bounded) and checked as JSON-RPC
//! 2.0 and as rmcp will read it; one that fails is answered at once with the
//! spec's error (`-32700` parse error, `-32600` invalid request, `-32602`
//! invalid params), carrying the message's id when one can be read (even
//! from the start of a line too long or too deep to parse) and `null` where
//! none can. The message is parsed once, strictly: an object that names a
//! member twice (`{"id":1,"id":1,…}`, which JSON parsers read differently)
//! is refused, and what goes on to rmcp is that parsed value (on stdio, as
//! rmcp's typed message: [`stdio::Framed`] is rmcp's transport there; over
//! HTTP, written out again), so rmcp reads exactly what was checked. A request to one of MCP's
//! own methods whose params do not have that method's shape is `-32602`
//! (rmcp would take it for a custom request). A request whose id is still in flight is refused the same way,
//! so no two answers ever share an id. A batch (which MCP no longer has) is
//! answered with one error per request in it. Everything else goes to rmcp
//! unchanged, and everything rmcp writes goes out unchanged, but for the MCP
//! revisions rewritten around rmcp when the server runs tasks (today
//! 2025-11-25's experimental tasks): a session's requests may be renamed for
//! toolhost's own handler and some answers completed, through the one
//! interface of [`crate::revision`], which this layer calls without knowing
//! what it rewrites.

use crate::revision::{self, Watch};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

mod reading;
mod stdio;

use reading::{id_in, strict};
pub use stdio::{Framed, framed};

/// The longest message read (rmcp's own default line limit).
pub const MAX_LINE: usize = 16 << 20;

/// How much of a line too long to keep is searched for its id.
const ID_PREFIX: usize = 4 << 10;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;

/// The requests rmcp has not answered yet, by [`key`].
pub(crate) type InFlight = Arc<Mutex<HashSet<String>>>;

/// The in-flight key of the request `id` in `scope` (an HTTP session; stdio
/// has one scope).
fn key(scope: &str, id: &Value) -> String {
    format!("{scope}\u{0}{id}")
}

// Returned once per message and taken apart at once, never stored: boxing
// the message for rmcp would add an allocation per message to save a copy.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Checked {
    /// For rmcp.
    Pass(Passed),
    /// A blank line.
    Skip,
    /// Answered here (one answer, or one per request of a batch).
    Answer(Vec<Value>),
}

/// A message for rmcp.
pub(crate) struct Passed {
    /// The in-flight key it was entered under, if it was.
    pub(crate) entered: Option<String>,
    /// What a request runs plugin code for (for the HTTP front's scope check).
    pub(crate) target: Option<Target>,
    /// The message as parsed here, which is what rmcp gets: on stdio as it
    /// is ([`stdio::Framed`] hands it over without writing it out), over
    /// HTTP written out again ([`Passed::bytes`]).
    pub(crate) message: Value,
    /// The same, read as rmcp reads it (a 2025-11-25 task request renamed).
    pub(crate) parsed: rmcp::model::ClientJsonRpcMessage,
    /// A 2025-11-25 task request renamed for toolhost's own handler, as rmcp is to read it.
    renamed: Option<Vec<u8>>,
    /// Its answer is adjusted on the way out when the server runs tasks.
    pub(crate) watch: Option<Watch>,
}

impl Passed {
    /// What rmcp is to read over HTTP: one line, without the newline
    /// (serde_json escapes every newline inside it).
    pub(crate) fn bytes(&self) -> Vec<u8> {
        match &self.renamed {
            Some(renamed) => renamed.clone(),
            // A `Value` always writes out.
            None => serde_json::to_vec(&self.message).unwrap_or_default(),
        }
    }
}

/// What a request asks a plugin to run, by the name the client gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `tools/call`
    Tool(String),
    /// `resources/read`
    Resource(String),
    /// `prompts/get`, or `completion/complete` of a prompt's argument
    Prompt(String),
    /// `completion/complete` of a resource template's argument
    Template(String),
}

impl Target {
    fn of(message: &Value) -> Option<Target> {
        let params = message.get("params")?;
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        match message.get("method")?.as_str()? {
            "tools/call" => text(params.get("name")).map(Target::Tool),
            "resources/read" => text(params.get("uri")).map(Target::Resource),
            "prompts/get" => text(params.get("name")).map(Target::Prompt),
            "completion/complete" => {
                let reference = params.get("ref")?;
                match reference.get("type")?.as_str()? {
                    "ref/prompt" => text(reference.get("name")).map(Target::Prompt),
                    "ref/resource" => text(reference.get("uri")).map(Target::Template),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Checks one message; a request with an id is entered in `in_flight`'s
/// set under its scope (refused if it is there already). `experimental`:
/// the message comes from a 2025-11-25 session of a server that runs tasks,
/// so its task requests are renamed for toolhost's own handler.
pub(crate) fn check(line: &[u8], in_flight: Option<(&InFlight, &str)>, experimental: bool) -> Checked {
    let text = line.trim_ascii();
    if text.is_empty() {
        return Checked::Skip;
    }
    let message: Value = match strict(text) {
        Ok(message) => message,
        // A response of the client's (no method) that names a member twice:
        // responses get no answer.
        Err(err) if err.classify() == serde_json::error::Category::Data && is_response(text) => {
            return Checked::Skip;
        }
        Err(err) => {
            let (code, why) = match err.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof
                    if !err.to_string().contains("recursion limit") =>
                {
                    (PARSE_ERROR, format!("the message is not JSON: {err}"))
                }
                _ => (INVALID_REQUEST, format!("the message cannot be read: {err}")),
            };
            return Checked::Answer(vec![error(id_in(text), code, &why)]);
        }
    };
    match message {
        Value::Array(batch) if batch.is_empty() => {
            Checked::Answer(vec![error(Value::Null, INVALID_REQUEST, "an empty batch")])
        }
        Value::Array(batch) => {
            // MCP has no batches: each request in it is refused.
            let answers: Vec<Value> = batch
                .iter()
                .filter(|item| item.get("id").is_some() || !item.is_object())
                .map(|item| error(usable_id(item.get("id")), INVALID_REQUEST, "MCP does not take JSON-RPC batches"))
                .collect();
            if answers.is_empty() { Checked::Skip } else { Checked::Answer(answers) }
        }
        Value::Object(_) => match check_message(&message, in_flight, experimental) {
            // The value moves on with it, not a copy.
            Checked::Pass(passed) => Checked::Pass(Passed { message, ..passed }),
            other => other,
        },
        _ => Checked::Answer(vec![error(Value::Null, INVALID_REQUEST, "a JSON-RPC message is an object")]),
    }
}

fn check_message(message: &Value, in_flight: Option<(&InFlight, &str)>, experimental: bool) -> Checked {
    let raw_id = message.get("id");
    let id = usable_id(raw_id);
    let refuse = |code, why: &str| Checked::Answer(vec![error(id.clone(), code, why)]);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(INVALID_REQUEST, "`jsonrpc` must be \"2.0\"");
    }
    if raw_id.is_some() && id.is_null() {
        return refuse(INVALID_REQUEST, "an id is a string or an integer");
    }
    let is_request = message.get("method").is_some();
    if let Some(method) = message.get("method")
        && !method.is_string()
    {
        return refuse(INVALID_REQUEST, "`method` must be a string");
    }
    if is_request
        && let Some(params) = message.get("params")
        && !params.is_object()
    {
        return refuse(INVALID_PARAMS, "`params` must be an object");
    }
    if let Some(method) = message.get("method").and_then(Value::as_str)
        && revision::reserved(method)
    {
        return refuse(METHOD_NOT_FOUND, &format!("`{}` is not an MCP method", toolhost_runtime::text::quoted(method)));
    }
    if !is_request && raw_id.is_none() {
        return refuse(INVALID_REQUEST, "a message needs a `method`, or an `id` with a `result` or an `error`");
    }
    // What rmcp cannot read it would drop, or answer without the id.
    // Read from the parsed value: the line is not tokenized again, and on
    // stdio this is the only time rmcp's types read it.
    let parsed = match <rmcp::model::ClientJsonRpcMessage as serde::Deserialize>::deserialize(message) {
        Err(err) => {
            if is_request {
                return refuse(INVALID_PARAMS, &format!("the request does not match its method's shape: {err}"));
            }
            if message.get("result").is_some() || message.get("error").is_some() {
                // A response of the client's that cannot be read: responses get no answer.
                return Checked::Skip;
            }
            return refuse(INVALID_REQUEST, "a message needs a `method`, or an `id` with a `result` or an `error`");
        }
        Ok(parsed) => parsed,
    };
    // One of MCP's own methods that rmcp could read only as a custom
    // request: its params are not that method's.
    if let rmcp::model::ClientJsonRpcMessage::Request(request) = &parsed
        && matches!(request.request, rmcp::model::ClientRequest::CustomRequest(_))
        && let Some(why) = message.get("method").and_then(Value::as_str).and_then(|m| mistyped(m, message))
    {
        return refuse(INVALID_PARAMS, &why);
    }
    let (parsed, renamed) = match experimental.then(|| revision::renamed(message)).flatten() {
        Some(renamed) => match serde_json::from_slice(&renamed) {
            Ok(parsed) => (parsed, Some(renamed)),
            Err(err) => return refuse(INVALID_REQUEST, &format!("the message cannot be read: {err}")),
        },
        None => (parsed, None),
    };
    let passed = Passed {
        entered: None,
        target: Target::of(message),
        message: Value::Null,
        parsed,
        renamed,
        watch: revision::watch(message),
    };
    let Some((in_flight, scope)) = in_flight else { return Checked::Pass(passed) };
    let mut entered = None;
    if is_request && !id.is_null() {
        let key = key(scope, &id);
        if !in_flight.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone()) {
            return refuse(INVALID_REQUEST, "a request with this id is still in flight: use another id");
        }
        entered = Some(key);
    }
    if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
        && let Some(cancelled) = message.get("params").and_then(|params| params.get("requestId"))
    {
        // A cancelled request may go unanswered (as MCP says): its id is free.
        in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&key(scope, cancelled));
    }
    Checked::Pass(Passed { entered, ..passed })
}

/// The answers to one message as it is sent: one, or a batch's array.
pub(crate) fn answer_body(answers: Vec<Value>) -> Vec<u8> {
    let answer = match answers.len() {
        1 => answers.into_iter().next().unwrap_or_default(),
        _ => Value::Array(answers),
    };
    answer.to_string().into_bytes()
}

/// A request entered in an [`InFlight`] set, taken out when dropped (when
/// its HTTP response has been sent in full).
pub(crate) struct Entered {
    pub(crate) set: InFlight,
    pub(crate) key: String,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.set.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.key);
    }
}

/// Why `message`, a request of MCP's method `method`, does not have that
/// method's shape; `None` when it does, or `method` is not one rmcp types
/// in every protocol revision (a method a revision removed, such as
/// `initialize` or `logging/setLevel` in 2026-07-28, is rmcp's to refuse
/// as not found there).
fn mistyped(method: &str, message: &Value) -> Option<String> {
    use rmcp::model as m;
    fn shape<T: serde::de::DeserializeOwned>(request: Value) -> Option<String> {
        serde_json::from_value::<T>(request).err().map(|err| err.to_string())
    }
    let mut request = serde_json::Map::new();
    request.insert("method".to_owned(), json!(method));
    if let Some(params) = message.get("params") {
        request.insert("params".to_owned(), params.clone());
    }
    let request = Value::Object(request);
    let why = match method {
        "completion/complete" => shape::<m::CompleteRequest>(request),
        "prompts/get" => shape::<m::GetPromptRequest>(request),
        "prompts/list" => shape::<m::ListPromptsRequest>(request),
        "resources/list" => shape::<m::ListResourcesRequest>(request),
        "resources/templates/list" => shape::<m::ListResourceTemplatesRequest>(request),
        "resources/read" => shape::<m::ReadResourceRequest>(request),
        "tools/call" => shape::<m::CallToolRequest>(request),
        "tools/list" => shape::<m::ListToolsRequest>(request),
        "tasks/get" => shape::<m::GetTaskRequest>(request),
        "tasks/update" => shape::<m::UpdateTaskRequest>(request),
        "tasks/cancel" => shape::<m::CancelTaskRequest>(request),
        _ => None,
    }?;
    Some(format!("the params of `{method}` do not have its shape: {why}"))
}

/// Whether `text` is a JSON-RPC response (read leniently: an object with
/// `result` or `error` and no `method`).
fn is_response(text: &[u8]) -> bool {
    serde_json::from_slice::<Value>(text).is_ok_and(|message| {
        message.get("method").is_none() && (message.get("result").is_some() || message.get("error").is_some())
    })
}

/// A JSON-RPC error response.
fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The id of a message, if it is one a response can carry: a string or an
/// integer. Anything else is `null`.
fn usable_id(id: Option<&Value>) -> Value {
    match id {
        Some(id @ Value::String(_)) => id.clone(),
        Some(Value::Number(number)) if number.is_i64() || number.is_u64() => Value::Number(number.clone()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match check(line.as_bytes(), Some((&InFlight::default(), "")), false) {
            Checked::Answer(mut answers) if answers.len() == 1 => answers.remove(0),
            Checked::Answer(answers) => Value::Array(answers),
            Checked::Pass(..) => json!("pass"),
            Checked::Skip => json!("skip"),
        }
    }

    #[test]
    fn bad_messages_are_answered_with_their_id_where_it_can_be_read() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"x":{}1{}}}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        let cases = [
            ("{not json", Value::Null, PARSE_ERROR),
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3), INVALID_REQUEST),
            (r#"{"id":"a","method":"ping"}"#, json!("a"), INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[1]}"#, json!(4), INVALID_PARAMS),
            ("42", Value::Null, INVALID_REQUEST),
            ("[]", Value::Null, INVALID_REQUEST),
            (r#"{"jsonrpc":"2.0","id":6}"#, json!(6), INVALID_REQUEST),
            (&deep, json!(7), INVALID_REQUEST),
        ];
        for (line, id, code) in cases {
            let answered = answer(line);
            assert_eq!((answered["id"].clone(), answered["error"]["code"].clone()), (id, json!(code)), "{line:.80}");
        }
        let batch = answer(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"ping"}]"#,
        );
        let ids: Vec<Value> = batch.as_array().unwrap().iter().map(|answer| answer["id"].clone()).collect();
        assert_eq!(ids, [json!(1), json!("b")]);
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#), "pass");
        assert_eq!(answer("  \r\n"), "skip");
    }

    #[test]
    fn an_id_in_flight_is_refused_until_answered_or_cancelled() {
        let in_flight = InFlight::default();
        let stdio = Some((&in_flight, ""));
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(check(ping, stdio, false), Checked::Pass(Passed { entered: Some(_), .. })));
        assert!(matches!(check(ping, stdio, false), Checked::Answer(_)));
        assert!(matches!(
            check(ping, Some((&in_flight, "another session")), false),
            Checked::Pass(Passed { entered: Some(_), .. })
        ));
        in_flight.lock().unwrap().remove(&key("", &json!(1)));
        assert!(matches!(check(ping, stdio, false), Checked::Pass(Passed { entered: Some(_), .. })));
        let cancel = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        assert!(matches!(check(cancel, stdio, false), Checked::Pass(Passed { entered: None, .. })));
        assert!(matches!(check(ping, stdio, false), Checked::Pass(Passed { entered: Some(_), .. })));
    }

    #[test]
    fn task_requests_are_renamed_only_for_a_2025_11_25_session_and_the_prefix_is_refused() {
        let get = br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}"#;
        let method = |experimental| match check(get, None, experimental) {
            Checked::Pass(passed) => serde_json::from_slice::<Value>(&passed.bytes()).unwrap()["method"].clone(),
            _ => json!("refused"),
        };
        assert_eq!(method(false), "tasks/get");
        assert_eq!(method(true), "toolhost/2025-11-25/tasks/get");
        let ours = r#"{"jsonrpc":"2.0","id":2,"method":"toolhost/2025-11-25/tasks/get","params":{"taskId":"x"}}"#;
        assert_eq!(answer(ours)["error"]["code"], METHOD_NOT_FOUND);
        let list = br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        assert!(matches!(check(list, None, false), Checked::Pass(Passed { watch: Some(watch), .. }) if !watch.early()));
    }

    #[test]
    fn a_member_named_twice_is_refused_with_the_requests_id_at_any_depth() {
        let cases = [
            (r#"{"id":701,"id":701,"jsonrpc":"2.0","method":"ping"}"#, json!(701)),
            (r#"{"jsonrpc":"2.0","id":"a","method":"ping","method":"tools/list"}"#, json!("a")),
            (r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","name":"b"}}"#, json!(3)),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","arguments":{"x":1,"x":2}}}"#,
                json!(4),
            ),
            (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#, Value::Null),
        ];
        // A response of the client's gets no answer, whatever it holds.
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":9,"result":{"action":"accept"},"result":{}}"#), "skip");
        for (line, id) in cases {
            let answered = answer(line);
            assert_eq!(answered["id"], id, "{line}: {answered}");
            assert_eq!(answered["error"]["code"], INVALID_REQUEST, "{line}: {answered}");
            assert!(answered["error"]["message"].as_str().unwrap().contains("appears twice"), "{answered}");
        }
        // The same members once each pass, and rmcp gets the parsed value written out again.
        let line = br#"{ "jsonrpc" : "2.0", "id" : 5, "method" : "tools/call", "params" : {"name":"a","arguments":{"x":[1,2.5,"\u00e9"]}} }"#;
        let Checked::Pass(passed) = check(line, None, false) else { panic!("refused") };
        let sent: Value = serde_json::from_slice(&passed.bytes()).unwrap();
        assert_eq!(sent, serde_json::from_slice::<Value>(line).unwrap());
        assert!(!passed.bytes().contains(&b'\n'));
        assert_eq!(passed.target, Some(Target::Tool("a".to_owned())));
    }

    #[test]
    fn a_request_of_an_mcp_method_with_params_of_the_wrong_shape_is_invalid_params() {
        for (line, id) in [
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#, json!(1)),
            (r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#, json!(2)),
            (r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":[]}}"#, json!(3)),
            (r#"{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{}}"#, json!(4)),
            (r#"{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":7}}"#, json!(5)),
        ] {
            let answered = answer(line);
            assert_eq!(
                (answered["id"].clone(), answered["error"]["code"].clone()),
                (id, json!(INVALID_PARAMS)),
                "{line}"
            );
        }
        // A method MCP does not have is still rmcp's (-32601 there), and so is
        // one a revision removed (2026-07-28 has no initialize: 404 and -32601).
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":6,"method":"x/y","params":{}}"#), "pass");
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}"#), "pass");
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{}}"#), "pass");
        assert_eq!(answer(r#"{"jsonrpc":"2.0","id":7,"method":"tasks/result","params":{"taskId":"t"}}"#), "pass");
    }

    #[test]
    fn the_target_of_each_kind_of_request_is_read() {
        let target = |message: Value| Target::of(&message);
        let request =
            |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        assert_eq!(target(request("resources/read", json!({"uri": "x://a"}))), Some(Target::Resource("x://a".into())));
        assert_eq!(target(request("prompts/get", json!({"name": "p"}))), Some(Target::Prompt("p".into())));
        let prompt = json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}});
        assert_eq!(target(request("completion/complete", prompt)), Some(Target::Prompt("p".into())));
        let template =
            json!({"ref": {"type": "ref/resource", "uri": "x://{id}"}, "argument": {"name": "id", "value": ""}});
        assert_eq!(target(request("completion/complete", template)), Some(Target::Template("x://{id}".into())));
        assert_eq!(target(request("tools/list", json!({}))), None);
    }

    #[test]
    fn the_id_is_read_from_the_start_of_a_cut_message() {
        assert_eq!(id_in(br#"{"jsonrpc":"2.0","id":"abc","params":{"text":"aaaa"#), json!("abc"));
        assert_eq!(id_in(br#"{"params":{"text":"aaaa"#), Value::Null);
    }
}
