//! Asking the person at the terminal what a tool asks (contract 0.2.0
//! elicitation), like an approval: a form field by field, or a page to open.
//! Roots are the working folder. Sampling is not the person's to answer (the
//! agent's [`ModelAsker`](toolhost::agent::asking::ModelAsker) takes it).

use super::terminal::{Input, Terminal};
use serde_json::{Map, Number, Value};
use std::future::Future;
use std::io::IsTerminal;
use std::pin::Pin;
use toolhost::agent::asking::working_folder;
use toolhost::runtime::ask::{Answer, AskError, Asked, Asker, Elicitation, Elicited, Question};
use toolhost::runtime::text::printable;

/// Asks at the terminal, one question at a time.
pub struct TerminalAsker {
    terminal: Terminal,
    input: Input,
    /// Questions from calls running at once are asked one after another.
    turn: tokio::sync::Mutex<()>,
}

impl TerminalAsker {
    /// An asker on this terminal, if stdin and stderr are one; else `None`
    /// (and what tools ask the user is declined).
    pub fn on_terminal(terminal: Terminal, input: Input) -> Option<TerminalAsker> {
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        interactive.then(|| TerminalAsker { terminal, input, turn: tokio::sync::Mutex::new(()) })
    }

    /// The answer to the first question of what a tool asks: only keys
    /// pressed after it is shown count (see [`Input::answer`]).
    async fn line(&self, question: &str) -> Option<String> {
        let line = self.input.answer(|| self.terminal.ask(question)).await;
        self.terminal.answered();
        line.map(|line| line.trim().to_owned())
    }

    /// The answer to a question asked right after the person answered the
    /// one before (a form's next field, or the same one again): what they
    /// typed since counts, so a pasted form fills in field by field.
    async fn next_line(&self, question: &str) -> Option<String> {
        self.terminal.ask(question);
        let line = self.input.next_typed().await;
        self.terminal.answered();
        line.map(|line| line.trim().to_owned())
    }

    async fn elicit(&self, elicitation: &Elicitation) -> Elicited {
        let _turn = self.turn.lock().await;
        self.terminal.pause();
        match elicitation {
            Elicitation::Url { message, url } => {
                eprintln!("\nA tool asks you to open a page: {}", printable(message));
                eprintln!("    {}", printable(url));
                match self.line("  go ahead? [y] yes, I opened it, [N] no: ").await.as_deref() {
                    Some("y" | "Y" | "yes") => Elicited::Accepted(Map::new()),
                    Some(_) => Elicited::Declined,
                    None => Elicited::Cancelled,
                }
            }
            Elicitation::Form { message, schema } => {
                eprintln!("\nA tool asks: {}", printable(message));
                match self.line("  answer it? [Y] yes, [n] decline, [c] cancel: ").await.as_deref() {
                    None | Some("c" | "C" | "cancel") => return Elicited::Cancelled,
                    Some("n" | "N" | "no") => return Elicited::Declined,
                    Some(_) => {}
                }
                // A form that does not check out is asked again, twice at most.
                for _ in 0..3 {
                    let Some(answers) = self.form(schema).await else { return Elicited::Cancelled };
                    match elicitation.check_answer(&answers) {
                        Ok(()) => return Elicited::Accepted(answers),
                        Err(why) => eprintln!("  {why}; once more:"),
                    }
                }
                Elicited::Cancelled
            }
        }
    }

    /// The form's fields, asked in order; `None` when the input ends.
    async fn form(&self, schema: &Value) -> Option<Map<String, Value>> {
        let empty = Map::new();
        let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut answers = Map::new();
        for (name, field) in properties {
            let needed = required.contains(&name.as_str());
            let choices = choices(field);
            let label = field.get("title").and_then(Value::as_str).unwrap_or(name);
            if let Some(description) = field.get("description").and_then(Value::as_str) {
                eprintln!("  {}: {}", printable(label), printable(description));
            }
            for (index, (value, title)) in choices.iter().enumerate() {
                eprintln!("    {}. {}", index + 1, printable(title.as_deref().unwrap_or(value)));
            }
            let default = field.get("default");
            let hint = match (field.get("type").and_then(Value::as_str), default) {
                (_, Some(default)) => format!(" [{}]", printable(&plain(default))),
                (Some("boolean"), None) => " [y/n]".to_owned(),
                (Some("array"), None) => " (numbers or values, separated by commas)".to_owned(),
                _ if !needed => " (optional)".to_owned(),
                _ => String::new(),
            };
            loop {
                let given = self.next_line(&format!("  {}{hint}: ", printable(label))).await?;
                if given.is_empty() {
                    match default {
                        Some(default) => {
                            answers.insert(name.clone(), default.clone());
                        }
                        None if needed => {
                            eprintln!("  this one is needed");
                            continue;
                        }
                        None => {}
                    }
                    break;
                }
                match parse(field, &choices, &given) {
                    Ok(value) => {
                        answers.insert(name.clone(), value);
                        break;
                    }
                    Err(why) => eprintln!("  {why}"),
                }
            }
        }
        Some(answers)
    }
}

/// A value as a person would type it.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The values a field may take (value, title): `enum` (with `enumNames`),
/// `oneOf`/`anyOf` of `const`s, or the same under `items` for a list.
fn choices(field: &Value) -> Vec<(String, Option<String>)> {
    let field = match field.get("type").and_then(Value::as_str) {
        Some("array") => field.get("items").unwrap_or(field),
        _ => field,
    };
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let title = names.and_then(|names| names.get(index)).and_then(Value::as_str).map(str::to_owned);
                (plain(value), title)
            })
            .collect();
    }
    let options = field.get("oneOf").or_else(|| field.get("anyOf")).and_then(Value::as_array);
    options
        .map(|options| {
            options
                .iter()
                .filter_map(|option| {
                    let value = option.get("const")?;
                    Some((plain(value), option.get("title").and_then(Value::as_str).map(str::to_owned)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One choice by its number, value or title.
fn choose(choices: &[(String, Option<String>)], given: &str) -> Result<String, String> {
    if let Ok(number) = given.parse::<usize>()
        && (1..=choices.len()).contains(&number)
    {
        return Ok(choices[number - 1].0.clone());
    }
    choices
        .iter()
        .find(|(value, title)| value == given || title.as_deref() == Some(given))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("`{}` is not one of the choices; type its number", printable(given)))
}

/// What was typed, as the field's type.
fn parse(field: &Value, choices: &[(String, Option<String>)], given: &str) -> Result<Value, String> {
    match field.get("type").and_then(Value::as_str) {
        Some("boolean") => match given.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".to_owned()),
        },
        Some("integer") => given.parse::<i64>().map(Value::from).map_err(|_| "a whole number, please".to_owned()),
        Some("number") => given
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "a number, please".to_owned()),
        Some("array") => given
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| if choices.is_empty() { Ok(part.to_owned()) } else { choose(choices, part) })
            .collect::<Result<Vec<_>, _>>()
            .map(|values| Value::Array(values.into_iter().map(Value::String).collect())),
        _ if !choices.is_empty() => choose(choices, given).map(Value::String),
        _ => Ok(Value::String(given.to_owned())),
    }
}

impl Asker for TerminalAsker {
    fn ask<'a>(&'a self, questions: &'a [(String, Question)]) -> Pin<Box<dyn Future<Output = Asked> + Send + 'a>> {
        Box::pin(async move {
            let mut answers = Vec::with_capacity(questions.len());
            for (_, question) in questions {
                answers.push(match question {
                    Question::Elicit(elicitation) => Ok(Answer::Elicited(self.elicit(elicitation).await)),
                    Question::Roots => Ok(Answer::Roots(working_folder().into_iter().collect())),
                    Question::Sample(_) => {
                        Err(AskError::Unsupported("a person at the terminal does not answer for the model".to_owned()))
                    }
                });
            }
            Asked::Answers(answers)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_answers_are_read_as_their_fields_type() {
        let titled =
            json!({"type": "string", "oneOf": [{"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]});
        let options = choices(&titled);
        assert_eq!(parse(&titled, &options, "2"), Ok(json!("v2")));
        assert_eq!(parse(&titled, &options, "First"), Ok(json!("v1")));
        assert!(parse(&titled, &options, "third").is_err());
        let legacy = json!({"type": "string", "enum": ["a", "b"], "enumNames": ["Ay", "Bee"]});
        assert_eq!(choices(&legacy)[1], ("b".to_owned(), Some("Bee".to_owned())));
        let multi = json!({"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}});
        assert_eq!(parse(&multi, &choices(&multi), "1, z"), Ok(json!(["x", "z"])));
        assert_eq!(parse(&json!({"type": "integer"}), &[], "30"), Ok(json!(30)));
        assert!(parse(&json!({"type": "integer"}), &[], "3.5").is_err());
        assert_eq!(parse(&json!({"type": "number"}), &[], "95.5"), Ok(json!(95.5)));
        assert_eq!(parse(&json!({"type": "boolean"}), &[], "Yes"), Ok(json!(true)));
    }
}
