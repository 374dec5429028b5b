//! How much a model should reason, as configured (`high`, `budget:4096`)
//! and as each protocol asks for it.

use serde::Deserialize;

/// How much a model should reason: an effort, or a budget of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// `minimal`, `low`, `medium` or `high`.
    Effort(Effort),
    /// A number of thinking tokens (at least 1024).
    Budget(u32),
}

/// A reasoning effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

impl Reasoning {
    /// The effort: as given, or for a budget the effort nearest it
    /// (≤ 2,048 tokens `low`, ≤ 8,192 `medium`, more `high`).
    pub fn effort(self) -> &'static str {
        let effort = match self {
            Reasoning::Effort(effort) => effort,
            Reasoning::Budget(tokens) if tokens <= 2_048 => Effort::Low,
            Reasoning::Budget(tokens) if tokens <= 8_192 => Effort::Medium,
            Reasoning::Budget(_) => Effort::High,
        };
        match effort {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// The budget in tokens: as given, or for an effort `minimal` 1,024,
    /// `low` 2,048, `medium` 8,192, `high` 24,576.
    pub fn budget(self) -> u32 {
        match self {
            Reasoning::Budget(tokens) => tokens,
            Reasoning::Effort(Effort::Minimal) => 1_024,
            Reasoning::Effort(Effort::Low) => 2_048,
            Reasoning::Effort(Effort::Medium) => 8_192,
            Reasoning::Effort(Effort::High) => 24_576,
        }
    }
}

impl std::str::FromStr for Reasoning {
    type Err = String;

    fn from_str(text: &str) -> Result<Reasoning, String> {
        Ok(match text.trim() {
            "minimal" => Reasoning::Effort(Effort::Minimal),
            "low" => Reasoning::Effort(Effort::Low),
            "medium" => Reasoning::Effort(Effort::Medium),
            "high" => Reasoning::Effort(Effort::High),
            other => match other.replace('_', "").parse::<u32>() {
                Ok(tokens) if tokens >= 1_024 => Reasoning::Budget(tokens),
                _ => {
                    return Err(format!(
                        "`{text}` is not a reasoning setting: write an effort (`minimal`, `low`, `medium` or \
                         `high`) or a budget of thinking tokens of at least 1024 (e.g. `8000`)"
                    ));
                }
            },
        })
    }
}

impl<'de> Deserialize<'de> for Reasoning {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Reasoning, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Tokens(u64),
            Text(String),
        }
        let text = match Written::deserialize(deserializer)? {
            Written::Tokens(tokens) => tokens.to_string(),
            Written::Text(text) => text,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}
