//! Write toolhost plugins in Rust (contract 0.2.0).
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
//! register_tools![Tool::new("shout", "Upper-cases a text.", shout).title("Shout").read_only()];
//! ```
//!
//! A tool that talks while it runs takes the [`Call`] as well
//! ([`Tool::with_call`]): it reports progress, asks the user (elicitation),
//! asks the model (sampling) and reads the client's roots. A tool's result is
//! an [`Output`]: text, JSON, images, audio, resource links and embedded
//! resources, in any number.
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the plugin.
//!
//! A plugin reaches nothing outside its own memory unless the operator grants
//! it: [`http`] sends requests to granted hosts; granted folders and
//! environment variables are reached through `std::fs` and `std::env` as usual;
//! elicitation, sampling and roots are granted like the rest. Say what the
//! plugin needs in a manifest beside the `.wasm` (`NAME.toml`, e.g.
//! `http = ["https://api.example.com"]`, `dirs = ["/data:ro"]`, `env = ["LANG"]`,
//! `secrets = ["API_KEY"]`, `elicitation = true`, `sampling = true`) so the
//! operator can see it.

extern crate self as toolhost_sdk;

pub use serde_json;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

#[doc(hidden)]
pub mod __private;
pub mod call;
pub mod http;
pub mod log;
mod output;

pub use call::{Answer, Call, Elicited, Question, RequestError, Root, Sampled, Sampling};
pub use output::{Annotations, Content, Json, Output, ResourceLink, Role};

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

type Invoke = Box<dyn Fn(&str, &Call) -> Result<Output, ToolError>>;

/// What a tool may do, as hints for clients and approval policies. The host
/// never lets a hint claim less than the plugin's grants allow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// It changes nothing outside itself.
    pub read_only: Option<bool>,
    /// It may destroy or overwrite something.
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments does nothing more.
    pub idempotent: Option<bool>,
    /// It reaches outside (the network, the world).
    pub open_world: Option<bool>,
}

/// One tool: its name, its description and the typed function behind it.
pub struct Tool {
    name: &'static str,
    title: Option<&'static str>,
    description: &'static str,
    schema: fn() -> String,
    output_schema: Option<fn() -> String>,
    hints: Hints,
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
        Tool::build::<A>(name, description, Box::new(move |arguments, _| function(parse(arguments)?).map(Into::into)))
    }

    /// A tool whose `function` also gets the running [`Call`], to report
    /// progress, ask the user or the model, or read the client's roots.
    pub fn with_call<A, O>(
        name: &'static str,
        description: &'static str,
        function: fn(A, &Call) -> Result<O, ToolError>,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: Into<Output> + 'static,
    {
        Tool::build::<A>(
            name,
            description,
            Box::new(move |arguments, call| function(parse(arguments)?, call).map(Into::into)),
        )
    }

    fn build<A: JsonSchema>(name: &'static str, description: &'static str, invoke: Invoke) -> Self {
        Tool {
            name,
            title: None,
            description,
            schema: schema_of::<A>,
            output_schema: None,
            hints: Hints::default(),
            invoke,
        }
    }

    /// Its name for people (a client may show it instead of the name).
    pub fn title(mut self, title: &'static str) -> Self {
        self.title = Some(title);
        self
    }

    /// Declares the schema of the tool's JSON result, derived from `T` (a
    /// struct). The host checks every result's JSON against it, and clients
    /// get it as the tool's `outputSchema` and the JSON as `structuredContent`.
    pub fn output<T: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(schema_of::<T>);
        self
    }

    /// Says the tool changes nothing outside itself.
    pub fn read_only(mut self) -> Self {
        self.hints.read_only = Some(true);
        self
    }

    /// Says the tool may destroy or overwrite something.
    pub fn destructive(mut self) -> Self {
        self.hints.destructive = Some(true);
        self
    }

    /// Says calling the tool twice with the same arguments does nothing more.
    pub fn idempotent(mut self) -> Self {
        self.hints.idempotent = Some(true);
        self
    }

    /// Sets all hints at once, including saying what the tool does not do.
    pub fn hints(mut self, hints: Hints) -> Self {
        self.hints = hints;
        self
    }
}

fn parse<A: DeserializeOwned>(arguments: &str) -> Result<A, ToolError> {
    serde_json::from_str(arguments).map_err(|err| ToolError::invalid_arguments(err.to_string()))
}

fn schema_of<A: JsonSchema>() -> String {
    schemars::schema_for!(A).as_value().to_string()
}

/// Exports the listed tools as this crate's plugin. Use it once per plugin.
///
/// ```ignore
/// toolhost_sdk::register_tools![
///     Tool::new("sha256", "Hex SHA-256 digest of a text.", sha256).read_only(),
///     Tool::with_call("summarize", "Summarizes a text with the client's model.", summarize),
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
            ) -> ::std::result::Result<::std::vec::Vec<$crate::__private::WitBlock>, $crate::__private::WitError> {
                $crate::__private::call_tool(::std::vec![$($tool),+], &name, &arguments)
            }
        }

        $crate::__private::bindings::__export_plugin!(__ToolhostPlugin with_types_in $crate::__private::bindings);
    };
}
