//! What a running call (contract 0.2.0) may ask of the client and the user:
//! elicitation (asking the user), sampling (asking the model, within a token
//! budget per call) and the client's roots. Each is denied unless granted:
//!
//! ```toml
//! [plugins.notes]
//! elicitation = true
//! sampling = { max_tokens = 4000 }   # or `true`: 4,000 tokens per call
//! roots = true
//! ```

use serde::Deserialize;

/// The tokens a call may ask the model for when `sampling = true`.
pub const DEFAULT_SAMPLING_TOKENS: u32 = 4_000;

/// What a call may ask of the client. `Default` asks nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestsGrant {
    /// It may ask the user (elicitation).
    pub elicitation: bool,
    /// It may ask the model, up to this many tokens per call (sampling).
    pub sampling: Option<u32>,
    /// It may read the client's roots.
    pub roots: bool,
}

/// `sampling = true` or `sampling = { max_tokens = N }`, as written.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum SamplingTable {
    /// `true` (the default budget) or `false` (none).
    On(bool),
    /// A budget of its own.
    Budget {
        /// The most tokens one call may ask the model for, all requests together.
        max_tokens: u32,
    },
}

impl SamplingTable {
    /// The per-call budget this grants, if any.
    pub fn budget(self) -> Option<u32> {
        match self {
            SamplingTable::On(true) => Some(DEFAULT_SAMPLING_TOKENS),
            SamplingTable::On(false) | SamplingTable::Budget { max_tokens: 0 } => None,
            SamplingTable::Budget { max_tokens } => Some(max_tokens),
        }
    }
}

impl RequestsGrant {
    /// True when nothing is granted.
    pub fn is_empty(&self) -> bool {
        self == &RequestsGrant::default()
    }

    /// Short human lines, as [`crate::Grants::describe`] has them.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let mut lines = Vec::new();
        if self.elicitation {
            lines.push(("asks", "the user (elicitation)".to_owned()));
        }
        if let Some(tokens) = self.sampling {
            lines.push(("asks", format!("the model (sampling), up to {tokens} tokens per call")));
        }
        if self.roots {
            lines.push(("reads", "the client's roots".to_owned()));
        }
        lines
    }

    /// Why `what` (`elicitation`, `sampling`, `roots`) is refused to `plugin`,
    /// if it is: what to add to the config.
    pub fn refusal(&self, plugin: &str, what: &str) -> Option<String> {
        let granted = match what {
            "elicitation" => self.elicitation,
            "sampling" => self.sampling.is_some(),
            _ => self.roots,
        };
        (!granted).then(|| {
            format!(
                "{what} is not granted to this plugin: add `{what} = true` under [plugins.{plugin}] in toolhost.toml"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_a_flag_or_a_budget() {
        let parse =
            |text: &str| toml::from_str::<std::collections::BTreeMap<String, SamplingTable>>(text).unwrap()["s"];
        assert_eq!(parse("s = true").budget(), Some(DEFAULT_SAMPLING_TOKENS));
        assert_eq!(parse("s = false").budget(), None);
        assert_eq!(parse("s = { max_tokens = 500 }").budget(), Some(500));
        assert_eq!(parse("s = { max_tokens = 0 }").budget(), None);
    }

    #[test]
    fn nothing_is_granted_by_default_and_a_refusal_says_what_to_add() {
        let none = RequestsGrant::default();
        assert!(none.is_empty() && none.describe().is_empty());
        let why = none.refusal("notes", "elicitation").unwrap();
        assert!(why.contains("`elicitation = true` under [plugins.notes]"), "{why}");
        let some = RequestsGrant { elicitation: true, ..none };
        assert_eq!(some.refusal("notes", "elicitation"), None);
        assert!(some.refusal("notes", "roots").is_some());
    }
}
