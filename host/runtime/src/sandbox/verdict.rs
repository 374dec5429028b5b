//! What a call came to: the guest's answer held to the output limit and
//! scrubbed of secret values ([`check_response`]), or a wasmtime error
//! classified into a [`CallError`] ([`classify`]), with what the guest last
//! wrote to stderr (a Rust panic, a Python traceback) as its explanation.

use super::guest::Response;
use crate::limits::{ByteSize, Limits};
use crate::outcome::{CallError, ToolOutput};
use crate::text::truncate;
use toolhost_grants::env::Redactor;
use wasmtime::Trap;

/// The guest's answer held to the contract and the output limit, with secret
/// values scrubbed from it: a text over the limit is `OutputTooLarge`; a `json`
/// output must parse, and its decoded strings are what is scrubbed.
pub(super) fn check_response(response: Response, limits: &Limits, redactor: &Redactor) -> Result<Response, CallError> {
    let within = |text: &str| {
        if text.len() as u64 > limits.output.bytes() {
            Err(CallError::OutputTooLarge { size: Some(ByteSize(text.len() as u64)), limit: limits.output })
        } else {
            Ok(())
        }
    };
    let scrub = |text: String| if redactor.is_empty() { text } else { redactor.scrub(text) };
    Ok(match response {
        Response::Called(Ok(ToolOutput::Text(text))) => {
            within(&text)?;
            Response::Called(Ok(ToolOutput::Text(scrub(text))))
        }
        Response::Called(Ok(ToolOutput::Json(text))) => {
            within(&text)?;
            let invalid = |err: serde_json::Error| {
                CallError::InvalidOutput(format!(
                    "it returned `json` output that is not valid JSON ({err}); this is a bug in the plugin"
                ))
            };
            // With no secrets to scrub, checking the text is JSON needs no tree.
            let text = if redactor.is_empty() {
                serde_json::from_str::<serde::de::IgnoredAny>(&text).map_err(invalid)?;
                text
            } else {
                let value: serde_json::Value = serde_json::from_str(&text).map_err(invalid)?;
                redactor.scrub_json(text, value).map_err(CallError::InvalidOutput)?
            };
            Response::Called(Ok(ToolOutput::Json(text)))
        }
        Response::Called(Ok(ToolOutput::Content(blocks))) => {
            Response::Called(Ok(ToolOutput::Content(crate::content_check::check(blocks, limits, redactor)?)))
        }
        Response::Called(Err(err)) => Response::Called(Err(check_error(err, &within, &scrub)?)),
        Response::Read(Ok(blocks)) => Response::Read(Ok(crate::content_check::check(blocks, limits, redactor)?)),
        Response::Prompt(Ok(prompt)) => Response::Prompt(Ok(crate::offers::check_prompt(prompt, limits, redactor)?)),
        Response::Completion(Ok(done)) => {
            Response::Completion(Ok(crate::offers::check_completion(done, limits, redactor)?))
        }
        Response::Read(Err(err)) => Response::Read(Err(check_error(err, &within, &scrub)?)),
        Response::Prompt(Err(err)) => Response::Prompt(Err(check_error(err, &within, &scrub)?)),
        Response::Completion(Err(err)) => Response::Completion(Err(check_error(err, &within, &scrub)?)),
        listed @ (Response::Tools(_) | Response::Offers(_)) => listed,
    })
}

/// A plugin's error text (a contract's `invalid-arguments` or `failed`, a
/// typed function's `err`), held to the output limit and scrubbed.
fn check_error(
    err: CallError,
    within: &impl Fn(&str) -> Result<(), CallError>,
    scrub: &impl Fn(String) -> String,
) -> Result<CallError, CallError> {
    Ok(match err {
        CallError::InvalidArguments(text) => {
            within(&text)?;
            CallError::InvalidArguments(scrub(text))
        }
        CallError::ToolFailed(text) => {
            within(&text)?;
            CallError::ToolFailed(scrub(text))
        }
        other => other,
    })
}

/// `error` with secret values scrubbed from the text it carries.
pub(super) fn scrub_error(error: CallError, redactor: &Redactor) -> CallError {
    match error {
        CallError::Trap { message } => CallError::Trap { message: redactor.scrub(message) },
        CallError::Host(message) => CallError::Host(redactor.scrub(message)),
        other => other,
    }
}

/// True when `err` is wasmtime refusing to copy more than the store's
/// hostcall fuel out of the guest (`Store::set_hostcall_fuel`). The error
/// type is private to wasmtime, so this matches its message.
fn is_transfer_too_large(err: &wasmtime::Error) -> bool {
    err.chain().any(|cause| cause.to_string().contains("fuel allocated for hostcalls has been exhausted"))
}

/// Turns a wasmtime error from instantiation or a call into its outcome.
pub(super) fn classify(err: wasmtime::Error, limits: &Limits, refused: Option<u64>, stderr: &str) -> CallError {
    tracing::debug!("guest error: {err:?}");
    let trap = err.downcast_ref::<Trap>().copied();
    match trap {
        Some(Trap::OutOfFuel) => return CallError::OutOfFuel { limit: limits.fuel },
        Some(Trap::Interrupt) => return CallError::Timeout { limit: limits.timeout },
        Some(Trap::StackOverflow) => return CallError::StackOverflow,
        Some(Trap::AsyncDeadlock) => return CallError::Stuck,
        _ => {}
    }
    if is_handle_limit(&err) {
        return CallError::HandleLimit { limit: super::MAX_HANDLES };
    }
    // A refused grow makes Rust (and most languages) abort, which shows up as
    // some trap: the refusal is the real cause.
    if let Some(requested) = refused {
        return CallError::MemoryLimit { limit: limits.memory, requested: ByteSize(requested) };
    }
    if is_transfer_too_large(&err) {
        return CallError::OutputTooLarge { size: None, limit: limits.output };
    }
    let said = guest_said(stderr);
    match trap {
        Some(trap) if said.is_empty() => CallError::Trap { message: trap.to_string() },
        Some(trap) => CallError::Trap { message: format!("{trap}; the plugin wrote: {said}") },
        None => {
            if err.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some() {
                return CallError::Host(format!("{err}"));
            }
            let chain = format!("{:#}", anyhow::Error::from(err));
            if said.is_empty() {
                CallError::Trap { message: chain }
            } else {
                CallError::Trap { message: format!("{chain}; the plugin wrote: {said}") }
            }
        }
    }
}

/// Whether wasmtime stopped the guest at the store's handle limit
/// ([`super::MAX_HANDLES`]). wasmtime says so only in words.
fn is_handle_limit(err: &wasmtime::Error) -> bool {
    err.chain().any(|cause| cause.to_string().contains("store handle limit exceeded"))
}

/// The last few meaningful lines a guest wrote to stderr before it trapped
/// (for Rust, the panic location and message; for Python, the exception and
/// the line that raised it), on one line.
fn guest_said(stderr: &str) -> String {
    if let Some(exception) = python_exception(stderr) {
        return exception;
    }
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("note: run with `RUST_BACKTRACE"))
        .collect();
    let tail = &lines[lines.len().saturating_sub(4)..];
    let mut said = tail.join(" ");
    truncate(&mut said, 1_000);
    said
}

/// The last Python traceback in `stderr` as `Exception: message (File "…",
/// line N, in f)`, without the lines the interpreter's runtime writes after it.
fn python_exception(stderr: &str) -> Option<String> {
    let start = stderr.rfind("Traceback (most recent call last):")?;
    let mut frame = None;
    for line in stderr[start..].lines().skip(1) {
        if line.starts_with("  File ") {
            frame = Some(line.trim());
        } else if !line.starts_with(' ') && !line.trim().is_empty() {
            // The first unindented line after the frames is the exception.
            let mut said = match frame {
                Some(frame) => format!("{} ({frame})", line.trim()),
                None => line.trim().to_owned(),
            };
            truncate(&mut said, 1_000);
            return Some(said);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_said_keeps_the_panic_and_drops_the_backtrace_hint() {
        let stderr = "thread '<unnamed>' panicked at src/lib.rs:14:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(guest_said(stderr), "thread '<unnamed>' panicked at src/lib.rs:14:5: boom");
        assert_eq!(guest_said(""), "");
    }

    #[test]
    fn guest_said_keeps_a_python_exception_and_its_line() {
        let stderr = "Traceback (most recent call last):\n  File \"/0/app.py\", line 12, in call_tool\n    \
                      return run()\n  File \"/0/app.py\", line 42, in run\nValueError: gave up on purpose\n\
                      thread '<unnamed>' panicked at src/lib.rs:300:13:\nPython function threw an exception\n\
                      note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(guest_said(stderr), "ValueError: gave up on purpose (File \"/0/app.py\", line 42, in run)");
    }
}
