//! Write toolhost plugins in Rust.
//!
//! A plugin is a set of typed functions, one per tool. Each takes an arguments
//! struct that derives `serde::Deserialize` and `schemars::JsonSchema` and returns
//! `Result<impl Into<Output>, ToolError>`. The SDK derives each tool's input
//! schema, deserializes the arguments before the body runs and maps errors onto
//! the contract in `wit/`; [`register_tools!`] exports the plugin.
//!
//! A plugin crate is a `cdylib` that depends on `toolhost-sdk`, `serde` (with
//! `derive`) and `schemars`:
//!
//! ```ignore
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use toolhost_sdk::{register_tools, Tool, ToolError};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Shout {
//!     /// The text to upper-case.
//!     text: String,
//! }
//!
//! fn shout(args: Shout) -> Result<String, ToolError> {
//!     Ok(args.text.to_uppercase())
//! }
//!
//! register_tools![Tool::new("shout", "Upper-cases a text.", shout)];
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the plugin.
//!
//! A plugin reaches nothing outside its own memory unless the operator grants
//! it: [`http`] sends requests to granted hosts; granted folders and
//! environment variables are reached through `std::fs` and `std::env` as usual.
//! Say what the plugin needs in a manifest beside the `.wasm` (`NAME.toml`,
//! e.g. `http = ["https://api.example.com"]`, `dirs = ["/data:ro"]`,
//! `env = ["LANG"]`, `secrets = ["API_KEY"]`) so the operator can see it.

extern crate self as toolhost_sdk;

pub use serde_json;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

#[doc(hidden)]
pub mod __private;
pub mod http;
pub mod log;

/// What a tool returns when it succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Plain text, passed on as it is.
    Text(String),
    /// A JSON document as text. Build it with [`Json`] or from a [`serde_json::Value`].
    Json(String),
}

impl From<String> for Output {
    fn from(text: String) -> Self {
        Output::Text(text)
    }
}

impl From<&str> for Output {
    fn from(text: &str) -> Self {
        Output::Text(text.to_owned())
    }
}

impl From<serde_json::Value> for Output {
    fn from(value: serde_json::Value) -> Self {
        Output::Json(value.to_string())
    }
}

/// Wraps any serializable value so a tool can return it as JSON output.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> From<Json<T>> for Output {
    fn from(Json(value): Json<T>) -> Self {
        match serde_json::to_string(&value) {
            Ok(text) => Output::Json(text),
            // Serializing plain data only fails for maps with non-string keys
            // and the like: report it as text rather than losing the result.
            Err(err) => Output::Text(format!("(output could not be encoded as JSON: {err})")),
        }
    }
}

/// Why a tool call did not produce output.
///
/// Any `std::error::Error` converts into [`ToolError::failed`], so `?` works
/// in a tool body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    kind: ErrorKind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    InvalidArguments,
    Failed,
}

impl ToolError {
    /// The arguments were wrong: the model can correct them and try again.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        ToolError { kind: ErrorKind::InvalidArguments, message: message.into() }
    }

    /// The arguments were fine but the tool could not do its job.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError { kind: ErrorKind::Failed, message: message.into() }
    }

    /// True for [`ToolError::invalid_arguments`].
    pub fn is_invalid_arguments(&self) -> bool {
        self.kind == ErrorKind::InvalidArguments
    }

    /// The human-readable reason.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(err: E) -> Self {
        ToolError::failed(err.to_string())
    }
}

type Invoke = Box<dyn Fn(&str) -> Result<Output, ToolError>>;

/// One tool: its name, its description and the typed function behind it.
pub struct Tool {
    name: &'static str,
    description: &'static str,
    schema: fn() -> String,
    invoke: Invoke,
}

impl Tool {
    /// A tool named `name` (`^[a-zA-Z0-9_-]{1,64}$`) that runs `function`.
    ///
    /// The input schema is derived from `A`, which must be a struct (the model
    /// always sends an object). Field doc comments become descriptions.
    pub fn new<A, O>(name: &'static str, description: &'static str, function: fn(A) -> Result<O, ToolError>) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: Into<Output> + 'static,
    {
        Tool {
            name,
            description,
            schema: schema_of::<A>,
            invoke: Box::new(move |arguments| {
                let args: A =
                    serde_json::from_str(arguments).map_err(|err| ToolError::invalid_arguments(err.to_string()))?;
                function(args).map(Into::into)
            }),
        }
    }
}

fn schema_of<A: JsonSchema>() -> String {
    schemars::schema_for!(A).as_value().to_string()
}

/// Exports the listed tools as this crate's plugin. Use it once per plugin.
///
/// ```ignore
/// toolhost_sdk::register_tools![
///     Tool::new("sha256", "Hex SHA-256 digest of a text.", sha256),
///     Tool::new("sha512", "Hex SHA-512 digest of a text.", sha512),
/// ];
/// ```
#[macro_export]
macro_rules! register_tools {
    ($($tool:expr),+ $(,)?) => {
        #[doc(hidden)]
        struct __ToolhostPlugin;

        impl $crate::__private::Guest for __ToolhostPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::__private::WitTool> {
                $crate::__private::list_tools(::std::vec![$($tool),+])
            }

            fn call_tool(
                name: ::std::string::String,
                arguments: ::std::string::String,
            ) -> ::std::result::Result<$crate::__private::WitOutput, $crate::__private::WitError> {
                $crate::__private::call_tool(::std::vec![$($tool),+], &name, &arguments)
            }
        }

        $crate::__private::bindings::__export_plugin!(__ToolhostPlugin with_types_in $crate::__private::bindings);
    };
}
