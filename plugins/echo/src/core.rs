//! The body of the `echo` tool, free of SDK types so that the host's benchmark
//! can compile the very same function natively.

use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// The text to return.
    pub text: String,
}

/// Returns the text unchanged.
pub fn echo(args: EchoArgs) -> String {
    args.text
}
