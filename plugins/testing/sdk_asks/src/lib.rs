//! `sdk_asks`: what a running call may do through the Rust SDK, for the
//! tests: a typed form, a sampling request, the client's roots, a keyed batch
//! of them, and a result of every kind of content block.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{
    Annotations, Answer, Call, Elicited, Output, Question, RequestError, Role, Sampling, Tool, ToolError,
    register_tools,
};

register_tools![
    Tool::with_call("sdk_elicit", "Asks the user who they are, with a typed form.", elicit),
    Tool::with_call("sdk_sample", "Asks the client's model to answer a prompt.", sample),
    Tool::with_call("sdk_roots", "Lists the client's roots.", roots),
    Tool::with_call("sdk_batch", "Asks the user and reads the roots in one batch.", batch),
    Tool::new("sdk_media", "Returns one block of every kind.", media).title("Every kind of block").read_only(),
];

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[derive(Deserialize, JsonSchema)]
struct Prompt {
    /// What to ask the model.
    prompt: String,
}

/// A colour.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Color {
    Blue,
    Red,
}

/// The form the user fills in.
#[derive(Deserialize, JsonSchema)]
struct Person {
    /// Your user name.
    username: String,
    /// Your favourite colour.
    color: Color,
    /// Is all this fine?
    ok: bool,
    /// A nickname, if you have one.
    nickname: Option<String>,
}

fn said(person: &Person) -> String {
    let nickname = person.nickname.as_deref().unwrap_or("none");
    format!("{} likes {:?} (ok: {}, nickname: {nickname})", person.username, person.color, person.ok)
}

fn elicit(_: Nothing, call: &Call) -> Result<String, ToolError> {
    call.progress(0.0, 1.0, "asking");
    Ok(match call.elicit::<Person>("Who are you?")? {
        Elicited::Accepted(person) => format!("accepted: {}", said(&person)),
        Elicited::Declined => "declined".to_owned(),
        Elicited::Cancelled => "cancelled".to_owned(),
    })
}

fn sample(args: Prompt, call: &Call) -> Result<String, ToolError> {
    let reply = call.sample(Sampling::new(100).system("Be brief.").user(args.prompt))?;
    Ok(format!("{} said: {} ({})", reply.model, reply.text(), reply.stop_reason.as_deref().unwrap_or("?")))
}

fn roots(_: Nothing, call: &Call) -> Result<String, ToolError> {
    let roots = call.roots()?;
    let listed: Vec<String> =
        roots.iter().map(|root| format!("{} ({})", root.uri, root.name.as_deref().unwrap_or("-"))).collect();
    Ok(format!("roots: {}", listed.join(", ")))
}

fn batch(_: Nothing, call: &Call) -> Result<String, ToolError> {
    let answers = call.ask(vec![
        ("who".to_owned(), Question::form::<Person>("Who are you, again?")),
        ("where".to_owned(), Question::Roots),
    ]);
    let mut lines = Vec::new();
    for answer in answers {
        lines.push(match answer {
            Ok(answer @ Answer::Elicited(_)) => match answer.form::<Person>()? {
                Elicited::Accepted(person) => format!("who: {}", said(&person)),
                Elicited::Declined => "who: declined".to_owned(),
                Elicited::Cancelled => "who: cancelled".to_owned(),
            },
            Ok(Answer::Roots(roots)) => format!("where: {} roots", roots.len()),
            Ok(Answer::Sampled(_)) => "a sampled reply nobody asked for".to_owned(),
            Err(RequestError::Unsupported(why)) => format!("unsupported: {why}"),
            Err(err) => return Err(err.into()),
        });
    }
    Ok(lines.join("\n"))
}

/// The smallest PNG: one transparent pixel.
const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

fn media(_: Nothing) -> Result<Output, ToolError> {
    Ok(Output::text("every kind")
        .and(Output::image("image/png", PIXEL.to_vec()).for_only(Role::User))
        .and(Output::link("test://notes/1", "note-1"))
        .and(Output::embedded_text("test://notes/2", Some("text/plain"), "the second note"))
        .and(Output::embedded_blob("test://notes/3", Some("application/octet-stream"), vec![0, 1, 2]))
        .and(Output::json(&serde_json_value()))
        .and(Output::text("important").annotated(Annotations { priority: Some(0.9), ..Default::default() })))
}

fn serde_json_value() -> toolhost_sdk::serde_json::Value {
    toolhost_sdk::serde_json::json!({ "blocks": 7 })
}
