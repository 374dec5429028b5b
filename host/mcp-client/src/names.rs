//! Catalog names for an MCP server's tools: `mcp__SERVER__TOOL`, each part
//! cleaned to `[A-Za-z0-9_-]`, at most 64 characters; a name that is too
//! long, or that two tools would share, ends in `_` and a short hash of the
//! raw server and tool names, so it is the same at every start.

use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The longest tool name model APIs accept.
pub const MAX_NAME_LEN: usize = 64;

/// Hex digits of the hash suffix.
const HASH_LEN: usize = 8;

/// The catalog name of each of `server`'s `tools` (raw names, in order).
pub fn catalog_names(server: &str, tools: &[&str]) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|tool| format!("mcp__{}__{}", clean(server), clean(tool))).collect();
    let mut count: HashMap<&str, usize> = HashMap::new();
    for name in &plain {
        *count.entry(name).or_default() += 1;
    }
    plain
        .iter()
        .zip(tools)
        .map(|(name, tool)| {
            if name.len() <= MAX_NAME_LEN && count[name.as_str()] == 1 {
                name.clone()
            } else {
                let keep = name.floor_char_boundary(MAX_NAME_LEN - HASH_LEN - 1);
                format!("{}_{}", &name[..keep], hash(server, tool))
            }
        })
        .collect()
}

/// `part` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
fn clean(part: &str) -> String {
    let cleaned: String =
        part.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if cleaned.is_empty() { "_".to_owned() } else { cleaned }
}

fn hash(server: &str, tool: &str) -> String {
    let digest =
        Sha256::new().chain_update(server.as_bytes()).chain_update([0]).chain_update(tool.as_bytes()).finalize();
    digest.iter().take(HASH_LEN / 2).map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_names_unchanged() {
        assert_eq!(
            catalog_names("everything", &["echo", "get-sum"]),
            ["mcp__everything__echo", "mcp__everything__get-sum"]
        );
    }

    #[test]
    fn cleans_each_part() {
        assert_eq!(catalog_names("my server", &["files.read/all"]), ["mcp__my_server__files_read_all"]);
        assert_eq!(catalog_names("", &["é"]), ["mcp______"]);
    }

    #[test]
    fn long_names_get_a_stable_hash_within_64() {
        let long = "a_tool_whose_name_goes_on_and_on_well_past_what_model_apis_accept";
        let first = catalog_names("server", &[long]);
        assert_eq!(first[0].len(), MAX_NAME_LEN);
        assert!(first[0].starts_with("mcp__server__a_tool_whose"), "{}", first[0]);
        assert_eq!(first, catalog_names("server", &["other", long])[1..], "stable whatever the other tools");
        assert_ne!(first, catalog_names("server", &[&format!("{long}2")]));
    }

    #[test]
    fn colliding_names_all_get_their_own_hash() {
        let names = catalog_names("s", &["a.b", "a/b", "c"]);
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("mcp__s__a_b_") && names[1].starts_with("mcp__s__a_b_"), "{names:?}");
        assert_eq!(names[2], "mcp__s__c");
        assert!(names.iter().all(|name| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')));
    }
}
