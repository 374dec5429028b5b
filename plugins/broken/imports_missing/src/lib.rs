//! Test plugin `imports_missing`: the plugin world plus an import of
//! `example:missing/weather`, which toolhost does not provide, so the plugin
//! must be refused at load, naming the import.

wit_bindgen::generate!({
    inline: r#"
        package example:missing;

        interface weather {
            forecast: func(city: string) -> string;
        }

        world imports-missing {
            include toolhost:plugin/plugin@0.1.0;
            import weather;
        }
    "#,
    path: "../../../wit/v0.1.0",
    world: "example:missing/imports-missing",
    generate_all,
});

use exports::toolhost::plugin::tools::Guest;
use toolhost::plugin::types::{CallError, Tool, ToolOutput};

struct Plugin;

export!(Plugin);

impl Guest for Plugin {
    fn list_tools() -> Vec<Tool> {
        vec![Tool {
            name: "imports_missing".to_owned(),
            description: "Asks the host for a weather forecast it cannot give.".to_owned(),
            input_schema: r#"{"type":"object"}"#.to_owned(),
        }]
    }

    fn call_tool(_name: String, _arguments: String) -> Result<ToolOutput, CallError> {
        Ok(ToolOutput::Text(example::missing::weather::forecast("Paris")))
    }
}
