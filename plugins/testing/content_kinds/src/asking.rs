//! The tools that ask (elicitation, sampling, roots), with the names and
//! keys the MCP conformance suite calls them by, and the diagnostics of its
//! `server-stateless` scenario.

use crate::toolhost::plugin::call::{self, Answer, ElicitAnswer, Elicitation, Message, Question, SamplingRequest};
use crate::toolhost::plugin::log::{self, Level};
use crate::toolhost::plugin::types::{Block, CallError, Content, Role, Tool};
use crate::{NO_ARGUMENTS, text, tool};
use serde_json::{Value, json};

const PROMPT_ARGUMENT: &str = r#"{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}"#;
const MESSAGE_ARGUMENT: &str = r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#;

/// The tools of this module.
pub fn tools() -> Vec<Tool> {
    let mut tools = vec![
        tool("test_sampling", "Asks the client's model the prompt it is given.", PROMPT_ARGUMENT),
        tool("test_elicitation", "Asks the user for a username and an email.", MESSAGE_ARGUMENT),
        tool("test_elicitation_sep1034_defaults", "Asks the user a form whose fields have defaults.", NO_ARGUMENTS),
        tool("test_elicitation_sep1330_enums", "Asks the user a form of every kind of enum.", NO_ARGUMENTS),
        tool("test_missing_capability", "Needs the client's sampling capability.", NO_ARGUMENTS),
        tool("test_streaming_elicitation", "Asks the user one question.", NO_ARGUMENTS),
        tool("test_logging_tool", "Logs three records.", NO_ARGUMENTS),
        tool(
            "test_trigger_tool_change",
            "Changes this plugin's tool list: rewrites its manifest (this tool's description) in the plugins \
             folder, granted as /plugins, which a watching host reloads.",
            NO_ARGUMENTS,
        ),
    ];
    tools.extend(task_tools());
    for (name, description) in [
        ("elicitation", "Asks the user's name, under the key `user_name`."),
        ("sampling", "Asks the model a question, under the key `capital_question`."),
        ("list_roots", "Reads the client's roots, under the key `client_roots`."),
        ("request_state", "Asks for a confirmation, under the key `confirm`."),
        ("multiple_inputs", "Asks the user, the model and the roots at once."),
        ("multi_round", "Asks two questions, one after the other."),
        ("tampered_state", "Asks for a confirmation, under the key `confirm`."),
        ("capabilities", "Asks the user and the model at once."),
    ] {
        tools.push(tool(&format!("test_input_required_result_{name}"), description, NO_ARGUMENTS));
    }
    tools
}

/// The tools the conformance suite's `tasks-*` scenarios call (SEP-2663).
/// Which of them run as tasks is the operator's choice (`[serve.tasks]`).
fn task_tools() -> Vec<Tool> {
    vec![
        tool(
            "greet",
            "Greets someone by name.",
            r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#,
        ),
        tool(
            "slow_compute",
            "Works for `seconds` (reporting progress each second), then says it is done.",
            r#"{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":600},"label":{"type":"string"}},"required":["seconds"]}"#,
        ),
        tool("failing_job", "Works for a second, then fails (a tool error).", NO_ARGUMENTS),
        tool(
            "protocol_error_job",
            "Works for a second, then reads the client's roots; from a client without the roots capability it \
             fails with MCP's missing-capability error (a protocol error).",
            NO_ARGUMENTS,
        ),
        tool(
            "confirm_delete",
            "Asks the user to confirm before it deletes `filename` (it deletes nothing).",
            r#"{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}"#,
        ),
        tool("multi_input", "Asks the user two questions at once, under the keys `first` and `second`.", NO_ARGUMENTS),
        tool(
            "test_tool_with_task",
            "Asks the user's name under the key `user_name`, then works for two seconds and greets them.",
            NO_ARGUMENTS,
        ),
    ]
}

fn sleep_seconds(seconds: f64) {
    std::thread::sleep(std::time::Duration::from_secs_f64(seconds.clamp(0.0, 600.0)));
}

fn number_argument(arguments: &str, name: &str) -> Result<f64, CallError> {
    let value: Value = serde_json::from_str(arguments).map_err(|err| CallError::InvalidArguments(err.to_string()))?;
    value.get(name).and_then(Value::as_f64).ok_or_else(|| CallError::InvalidArguments(format!("`{name}` is missing")))
}

fn form(message: &str, schema: Value) -> Question {
    Question::Elicit(Elicitation::Form((message.to_owned(), schema.to_string())))
}

fn ask_name() -> Question {
    form(
        "What is your name?",
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn confirm() -> Question {
    form("Please confirm", json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}))
}

fn sampling(prompt: &str, max_tokens: u32) -> SamplingRequest {
    SamplingRequest {
        messages: vec![Message { role: Role::User, content: Content::Text(prompt.to_owned()) }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: vec![],
        preferences: None,
    }
}

fn failed(err: call::RequestError) -> CallError {
    CallError::Failed(match err {
        call::RequestError::Denied(why) => format!("denied: {why}"),
        call::RequestError::Unsupported(why) => format!("unsupported: {why}"),
        call::RequestError::Limit(why) => format!("limit: {why}"),
        call::RequestError::Failed(why) => format!("failed: {why}"),
    })
}

fn elicited(answer: &ElicitAnswer) -> String {
    match answer {
        ElicitAnswer::Accepted(content) => format!("action=accept, content={content}"),
        ElicitAnswer::Declined => "action=decline".to_owned(),
        ElicitAnswer::Cancelled => "action=cancel".to_owned(),
    }
}

fn said(answer: &Answer) -> String {
    match answer {
        Answer::Elicited(answer) => elicited(answer),
        Answer::Sampled(reply) => match &reply.content {
            Content::Text(text) => text.clone(),
            _ => "(not text)".to_owned(),
        },
        Answer::Roots(roots) => roots.iter().map(|root| root.uri.as_str()).collect::<Vec<_>>().join(", "),
    }
}

/// Asks `questions` and says every answer, or fails with the first refusal.
fn ask(questions: Vec<(&str, Question)>) -> Result<Vec<String>, CallError> {
    let questions: Vec<(String, Question)> = questions.into_iter().map(|(key, q)| (key.to_owned(), q)).collect();
    call::ask(&questions).into_iter().map(|answer| answer.map(|answer| said(&answer)).map_err(failed)).collect()
}

fn string_argument(arguments: &str, name: &str) -> Result<String, CallError> {
    let value: Value = serde_json::from_str(arguments).map_err(|err| CallError::InvalidArguments(err.to_string()))?;
    value
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CallError::InvalidArguments(format!("`{name}` is missing")))
}

/// Runs the tool `name`, if it is one of this module's.
pub fn call(name: &str, arguments: &str) -> Option<Result<Vec<Block>, CallError>> {
    let ours = tools().iter().any(|tool| tool.name == name);
    ours.then(|| run(name, arguments).map(|said| vec![text(&said)]))
}

fn run(name: &str, arguments: &str) -> Result<String, CallError> {
    Ok(match name {
        "test_sampling" => {
            let reply = call::sample(&sampling(&string_argument(arguments, "prompt")?, 100)).map_err(failed)?;
            format!("LLM response: {}", said(&Answer::Sampled(reply)))
        }
        "test_elicitation" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            });
            let answer = call::elicit(&Elicitation::Form((string_argument(arguments, "message")?, schema.to_string())));
            format!("User response: {}", elicited(&answer.map_err(failed)?))
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true},
                },
            });
            let answer =
                call::elicit(&Elicitation::Form(("Please review your details".to_owned(), schema.to_string())));
            format!("Elicitation completed: {}", elicited(&answer.map_err(failed)?))
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ]},
                    "legacyEnum": {
                        "type": "string",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"],
                    },
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]}},
                },
            });
            let answer = call::elicit(&Elicitation::Form(("Pick your options".to_owned(), schema.to_string())));
            format!("Elicitation completed: {}", elicited(&answer.map_err(failed)?))
        }
        "test_missing_capability" => {
            let reply = call::sample(&sampling("Say something.", 20)).map_err(failed)?;
            format!("sampled: {}", said(&Answer::Sampled(reply)))
        }
        "test_streaming_elicitation" => {
            let said = ask(vec![("stream_question", confirm())])?;
            format!("answered: {}", said.join("; "))
        }
        "test_logging_tool" => {
            for step in 1..=3 {
                log::log(Level::Info, &format!("log record {step}"), &[]);
            }
            "logged three records".to_owned()
        }
        "test_trigger_tool_change" => {
            const MANIFEST: &str = "/plugins/content_kinds.toml";
            const COUNTED: &str = "# changes so far: ";
            let before = std::fs::read_to_string(MANIFEST).unwrap_or_default();
            let changes = before
                .lines()
                .find_map(|line| line.strip_prefix(COUNTED))
                .and_then(|count| count.trim().parse::<u64>().ok())
                .unwrap_or(0)
                + 1;
            let manifest = format!(
                "{COUNTED}{changes}\nelicitation = true\nsampling = true\nroots = true\n\n\
                 [tools.test_trigger_tool_change]\ndescription = \"Changes this plugin's tool list ({changes} so far).\"\n"
            );
            std::fs::write(MANIFEST, manifest).map_err(|err| {
                CallError::Failed(format!("could not write {MANIFEST} ({err}): grant the plugins folder as /plugins"))
            })?;
            format!("the tool list changed ({changes} so far)")
        }
        "test_input_required_result_elicitation" => {
            let said = ask(vec![("user_name", ask_name())])?;
            format!("Hello, {}!", said.join(""))
        }
        "test_input_required_result_sampling" => {
            let question = Question::Sample(sampling("What is the capital of France?", 100));
            format!("The model said: {}", ask(vec![("capital_question", question)])?.join(""))
        }
        "test_input_required_result_list_roots" => {
            format!("Roots: {}", ask(vec![("client_roots", Question::Roots)])?.join(""))
        }
        "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
            format!("state-ok: {}", ask(vec![("confirm", confirm())])?.join(""))
        }
        "test_input_required_result_multiple_inputs" => {
            let said = ask(vec![
                ("user_name", ask_name()),
                ("greeting", Question::Sample(sampling("Generate a greeting", 50))),
                ("client_roots", Question::Roots),
            ])?;
            format!("All answered: {}", said.join("; "))
        }
        "test_input_required_result_multi_round" => {
            let name = ask(vec![(
                "step1",
                form(
                    "Step 1: What is your name?",
                    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                ),
            )])?;
            let color = ask(vec![(
                "step2",
                form(
                    "Step 2: What is your favorite color?",
                    json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}),
                ),
            )])?;
            format!("Both steps answered: {}; {}", name.join(""), color.join(""))
        }
        "test_input_required_result_capabilities" => {
            // Each answer or refusal is said: a client without one of the
            // capabilities is asked only the other.
            let questions = vec![
                ("user_input".to_owned(), ask_name()),
                ("llm_input".to_owned(), Question::Sample(sampling("Say hello.", 20))),
            ];
            let said: Vec<String> = call::ask(&questions)
                .into_iter()
                .map(|answer| match answer {
                    Ok(answer) => said(&answer),
                    Err(err) => format!("{:?}", failed(err)),
                })
                .collect();
            format!("Answered what the client could: {}", said.join("; "))
        }
        "greet" => format!("Hello, {}!", string_argument(arguments, "name")?),
        "slow_compute" => {
            let seconds = number_argument(arguments, "seconds")?;
            let label = string_argument(arguments, "label").unwrap_or_else(|_| "slow_compute".to_owned());
            let whole = seconds.floor() as u64;
            for second in 0..whole {
                call::progress(second as f64, Some(seconds), Some(&format!("computing {label}")));
                sleep_seconds(1.0);
            }
            sleep_seconds(seconds - whole as f64);
            format!("computed {label} in {seconds}s")
        }
        "failing_job" => {
            sleep_seconds(1.0);
            return Err(CallError::Failed("failing_job always fails (a tool error)".to_owned()));
        }
        "protocol_error_job" => {
            sleep_seconds(1.0);
            format!("Roots: {}", ask(vec![("job_roots", Question::Roots)])?.join(""))
        }
        "confirm_delete" => {
            let filename = string_argument(arguments, "filename")?;
            let question = form(
                &format!("Delete {filename}?"),
                json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}),
            );
            format!("confirm_delete {filename}: {}", ask(vec![("confirm", question)])?.join(""))
        }
        "multi_input" => {
            let schema = json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
            });
            let said = ask(vec![
                ("first", form("First question", schema.clone())),
                ("second", form("Second question", schema)),
            ])?;
            format!("Both answered: {}", said.join("; "))
        }
        "test_tool_with_task" => {
            let said = ask(vec![("user_name", ask_name())])?;
            sleep_seconds(2.0);
            format!("Hello, {}! (after two seconds of work)", said.join(""))
        }
        _ => return Err(CallError::InvalidArguments(format!("no tool named {name}"))),
    })
}

/// The prompt `test_input_required_result_prompt`: asks the user for context.
pub fn context_prompt() -> Result<String, CallError> {
    let question = form(
        "What context should the prompt use?",
        json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}),
    );
    Ok(format!("Use this context: {}", ask(vec![("user_context", question)])?.join("")))
}
