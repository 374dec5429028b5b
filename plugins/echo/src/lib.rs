//! `echo`: returns the text it is given. The trivial tool behind the per-call
//! overhead benchmark, whose native baseline compiles `core.rs` directly.

mod core;

use toolhost_sdk::{Tool, ToolError, register_tools};

register_tools![Tool::new("echo", "Returns the given text unchanged.", echo)];

fn echo(args: core::EchoArgs) -> Result<String, ToolError> {
    Ok(core::echo(args))
}
