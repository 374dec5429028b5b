//! What the loop offers the model each turn: every tool of the catalog
//! generation, or while searching the search tool and the tools found so
//! far; and the loop's own tools (search, `read_output` over the whole
//! outputs of cut results).

use super::{Agent, SearchMode, cut_to_budget, error_result, failed_before_running, text_result};
use crate::events::Event;
use crate::model::{ToolCall, ToolResult, ToolSpec};
use crate::search;
use std::sync::Arc;
use toolhost_catalog::Catalog;

impl Agent {
    /// The catalog snapshot for one turn and its tools: the turn's list and
    /// its calls agree even if a reload swaps the catalog.
    pub(crate) fn snapshot(&self) -> (Arc<Catalog>, Arc<Tools>) {
        let catalog = self.host.catalog();
        let mut specs = self.specs.lock().unwrap_or_else(|p| p.into_inner());
        if specs.0 != catalog.generation() {
            *specs = (catalog.generation(), Arc::new(Tools::new(&catalog)));
        }
        (catalog, specs.1.clone())
    }

    /// Whether this turn offers search rather than every tool.
    pub(crate) fn searching(&self, tools: &Tools) -> bool {
        match self.options.tool_search.mode {
            SearchMode::On => true,
            SearchMode::Off => false,
            SearchMode::Auto => tools.tokens > self.options.tool_search.threshold,
        }
    }

    /// Whether this turn's search is the provider's own (see
    /// [`ToolSearch::native`](crate::ToolSearch::native)).
    pub(crate) fn searching_natively(&self, tools: &Tools) -> bool {
        self.options.tool_search.native && self.client.native_search() && self.searching(tools)
    }

    /// The tools sent with one request: every tool, or while searching the
    /// search tool, the `always` ones and those found lately; or, where the
    /// provider searches itself, every tool deferred but the `always` ones.
    pub(crate) fn offered(&self, tools: &Tools) -> Arc<Vec<ToolSpec>> {
        let searching = self.searching(tools);
        let native = searching && self.searching_natively(tools);
        // Once a result was cut, the rest of it can be read.
        let readable = !self.kept.lock().unwrap_or_else(|p| p.into_inner()).outputs.is_empty();
        if !searching && !readable {
            // The common case: the generation's list as it is, not copied per turn.
            return tools.specs.clone();
        }
        if native {
            let deferred = tools.deferred.get_or_init(|| {
                let always = &self.options.tool_search.always;
                let deferred =
                    tools.specs.iter().map(|spec| ToolSpec { defer: !always.contains(&spec.name), ..spec.clone() });
                Arc::new(deferred.collect())
            });
            if !readable {
                return deferred.clone();
            }
            let mut offered = deferred.as_ref().clone();
            offered.push(tools.read_spec());
            return Arc::new(offered);
        }
        let mut offered = if searching {
            let found = self.found.lock().unwrap_or_else(|p| p.into_inner());
            let wanted =
                |spec: &&ToolSpec| self.options.tool_search.always.contains(&spec.name) || found.contains(&spec.name);
            let mut offered = vec![tools.search_spec()];
            offered.extend(tools.specs.iter().filter(wanted).cloned());
            offered
        } else {
            tools.specs.as_ref().clone()
        };
        if readable {
            offered.push(tools.read_spec());
        }
        Arc::new(offered)
    }

    /// Answers a call of `read_output`: a slice of a cut result's whole output.
    pub(crate) fn read_output(&self, call: &ToolCall) -> ToolResult {
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let of = arguments.get("call_id").and_then(serde_json::Value::as_str).unwrap_or_default();
        let offset = arguments.get("offset").and_then(serde_json::Value::as_u64).unwrap_or(0) as usize;
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, text)) = kept.outputs.iter().find(|(id, _)| id == of) else {
            let message = format!(
                "no cut output is kept for call `{of}`: `call_id` must be the id of a call whose result said bytes \
                 were cut"
            );
            self.emit(failed_before_running(call, "invalid_arguments", &message));
            return error_result(call, message);
        };
        let budget = self.options.output_budget.saturating_sub(96).max(1);
        let start = text.floor_char_boundary(offset.min(text.len()));
        let end = text.floor_char_boundary(start.saturating_add(budget).min(text.len()));
        let end = if end == start { text.ceil_char_boundary((start + 1).min(text.len())) } else { end };
        let mut content = text[start..end].to_owned();
        if end < text.len() {
            content.push_str(&format!("\n[… {} more bytes: read_output with offset {end} …]", text.len() - end));
        }
        self.emit(Event::OutputRead { call_id: call.id.clone(), of: of.to_owned(), offset: start, bytes: end - start });
        text_result(call, content)
    }

    /// Keeps `names` offered while searching, as the most recent.
    pub(crate) fn remember(&self, names: impl IntoIterator<Item = String>) {
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        for name in names {
            found.retain(|known| *known != name);
            found.push(name);
        }
        let keep = self.options.tool_search.recent;
        if found.len() > keep {
            let extra = found.len() - keep;
            found.drain(..extra);
        }
    }

    /// Answers a call of the search tool: the tools that match its query,
    /// which are offered from the next request on.
    pub(crate) fn search(&self, tools: &Tools, call: &ToolCall) -> ToolResult {
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let query = arguments.get("query").and_then(serde_json::Value::as_str).unwrap_or_default();
        let limit = arguments.get("limit").and_then(serde_json::Value::as_u64).unwrap_or(5).clamp(1, 20);
        if query.trim().is_empty() {
            let message = "`query` must be a non-empty string: words of what the tool should do".to_owned();
            self.emit(failed_before_running(call, "invalid_arguments", &message));
            return error_result(call, message);
        }
        let hits: Vec<&ToolSpec> =
            tools.index.search(query, limit as usize).into_iter().map(|i| &tools.specs[i]).collect();
        let names: Vec<String> = hits.iter().map(|spec| spec.name.clone()).collect();
        self.remember(names.iter().cloned());
        self.emit(Event::ToolSearch { call_id: call.id.clone(), query: query.to_owned(), found: names, native: false });
        let listed: Vec<serde_json::Value> = hits
            .iter()
            .map(|spec| {
                let arguments: Vec<&String> = spec
                    .schema
                    .get("properties")
                    .and_then(serde_json::Value::as_object)
                    .map(|properties| properties.keys().collect())
                    .unwrap_or_default();
                serde_json::json!({"name": spec.name, "description": spec.description, "arguments": arguments})
            })
            .collect();
        let content = if listed.is_empty() {
            format!("No tool matches `{query}`. Try other words for what the tool should do.")
        } else {
            format!(
                "{} tool(s) found; they can be called from your next message on:\n{}",
                listed.len(),
                serde_json::Value::Array(listed)
            )
        };
        let (content, _) = cut_to_budget(&content, self.options.output_budget);
        text_result(call, content)
    }
}

/// One catalog generation's tools as the loop offers them.
pub(crate) struct Tools {
    pub(crate) specs: Arc<Vec<ToolSpec>>,
    /// `specs` for the provider's own search: each deferred but the
    /// `always` ones (made the first time a turn needs it).
    pub(crate) deferred: std::sync::OnceLock<Arc<Vec<ToolSpec>>>,
    /// Their estimated tokens, all together.
    pub(crate) tokens: usize,
    pub(crate) index: search::Index,
    /// The search tool's name: `search_tools`, unless a tool has it.
    pub(crate) search_name: String,
    /// The cut-output reader's: `read_output`, unless a tool has it.
    pub(crate) read_name: String,
}

/// Whole outputs of cut results, oldest first, at most `Kept::BYTES` in all.
#[derive(Default)]
pub(crate) struct Kept {
    pub(crate) outputs: std::collections::VecDeque<(String, String)>,
    pub(crate) bytes: usize,
}

impl Kept {
    /// What is kept at most, in bytes: older outputs make room.
    const BYTES: usize = 32 << 20;

    pub(crate) fn keep(&mut self, call_id: String, text: String) {
        if text.len() > Self::BYTES {
            return;
        }
        self.bytes += text.len();
        self.outputs.push_back((call_id, text));
        while self.bytes > Self::BYTES {
            let Some((_, old)) = self.outputs.pop_front() else { break };
            self.bytes -= old.len();
        }
    }
}

impl Tools {
    pub(crate) fn new(catalog: &Catalog) -> Tools {
        let specs: Vec<ToolSpec> = catalog
            .tools()
            .iter()
            .map(|entry| ToolSpec {
                name: entry.name().to_owned(),
                description: entry.description().to_owned(),
                schema: entry.schema().clone(),
                defer: false,
            })
            .collect();
        let own_name = |name: &str| {
            let mut name = name.to_owned();
            while catalog.find(&name).is_some() {
                name.insert_str(0, "toolhost_");
            }
            name
        };
        let search_name = own_name("search_tools");
        let read_name = own_name("read_output");
        Tools {
            tokens: specs.iter().map(search::estimated_tokens).sum(),
            index: search::Index::new(&specs),
            specs: Arc::new(specs),
            deferred: std::sync::OnceLock::new(),
            search_name,
            read_name,
        }
    }

    /// The cut-output reader as the model sees it.
    fn read_spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.read_name.clone(),
            description: "Reads the part of a tool's result that was cut to fit the context, from the call id and \
                          offset its marker gives."
                .to_owned(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "call_id": {"type": "string", "description": "The id of the call whose result was cut."},
                    "offset": {"type": "integer", "minimum": 0, "description": "The byte offset to read from."}
                },
                "required": ["call_id", "offset"],
                "additionalProperties": false
            }),
            defer: false,
        }
    }

    /// The search tool as the model sees it.
    fn search_spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.search_name.clone(),
            description: format!(
                "Finds tools by what they do. {} tools are available but not listed; describe the task in a few \
                 words, and the tools found can be called from your next message on.",
                self.specs.len()
            ),
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words for what the tool should do, e.g. `weather forecast city`."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many tools to return (default 5)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            defer: false,
        }
    }
}
