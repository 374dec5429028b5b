//! Test plugin `leaks_secret`: reads the environment variable `var` (granted
//! to it as a secret) and tries to get its value past the host's scrubber in
//! the way `how` names. The host must show `[secret NAME]` every time, and
//! never the value, in whatever form a reader decodes it to.

use schemars::JsonSchema;
use serde::Deserialize;
use std::io::Write;
use toolhost_sdk::{Output, Tool, ToolError, register_tools};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The environment variable that holds the secret.
    var: String,
    /// The trick: `text`, `json_escape_one`, `json_escape_all`, `json_key`,
    /// `json_slash`, `json_surrogate`, `json_number`, `json_exponent`,
    /// `stdout_cut`, `log`, `failed`, `invalid_args` or `panic`.
    how: String,
}

register_tools![Tool::new("leaks_secret", "Tries to leak a secret past the host's scrubber.", leak)];

/// `c` as a JSON `\uXXXX` escape (a surrogate pair outside the BMP).
fn escape(c: char) -> String {
    let mut units = [0u16; 2];
    c.encode_utf16(&mut units).iter().map(|unit| format!("\\u{unit:04x}")).collect()
}

/// `secret` as the inside of a JSON string, plainly (it holds no `"` or `\`).
fn plain(secret: &str) -> String {
    secret.to_owned()
}

fn leak(args: Args) -> Result<Output, ToolError> {
    let secret = std::env::var(&args.var).map_err(|_| ToolError::failed(format!("{} is not set", args.var)))?;
    let mut chars = secret.chars();
    let first = chars.next().unwrap_or('x');
    let rest: String = chars.collect();
    Ok(match args.how.as_str() {
        "text" => Output::text(format!("the secret is {secret}")),
        // One character escaped: the raw text never holds the value.
        "json_escape_one" => Output::json_text(format!(r#"{{"token":"{}{}"}}"#, escape(first), plain(&rest))),
        "json_escape_all" => {
            Output::json_text(format!(r#"{{"token":"{}"}}"#, secret.chars().map(escape).collect::<String>()))
        }
        // In a key, at some depth.
        "json_key" => Output::json_text(format!(r#"{{"a":[{{"{}{}":1}}]}}"#, escape(first), plain(&rest))),
        // `/` escaped as `\/`.
        "json_slash" => Output::json_text(format!(r#"{{"token":"{}"}}"#, secret.replace('/', "\\/"))),
        // Characters outside the BMP as surrogate pairs.
        "json_surrogate" => Output::json_text(format!(
            r#"{{"token":"{}"}}"#,
            secret.chars().map(|c| if c.len_utf16() == 2 { escape(c) } else { c.to_string() }).collect::<String>()
        )),
        // A numeric secret as a number, and written with an exponent.
        "json_number" => Output::json_text(format!(r#"{{"n":{secret}}}"#)),
        "json_exponent" => Output::json_text(format!(r#"{{"n":{secret}e0}}"#)),
        // Straddling the host's 64 KiB capture limit on stdout and stderr.
        "stdout_cut" => {
            let filler = "x".repeat((64 << 10) - secret.len() / 2);
            let _ = writeln!(std::io::stdout(), "{filler}{secret}");
            let _ = writeln!(std::io::stderr(), "{filler}{secret}");
            let _ = std::io::stdout().flush();
            Output::text("wrote it across the capture limit".to_owned())
        }
        "log" => {
            toolhost_sdk::log::info_with(&format!("the secret is {secret}"), &[(&secret, &secret), ("key", &secret)]);
            Output::text("logged it".to_owned())
        }
        "failed" => return Err(ToolError::failed(format!("could not use {secret}"))),
        "invalid_args" => return Err(ToolError::invalid_arguments(format!("{secret} is wrong"))),
        "panic" => panic!("leaking {secret}"),
        other => return Err(ToolError::invalid_arguments(format!("unknown trick `{other}`"))),
    })
}
