//! `tools/list` in pages, for folders of thousands of tools.
//!
//! A request without a cursor gets the first `page_size` tools (sorted by
//! name, as the catalog holds them) and, if more remain, a `nextCursor`: the
//! offset of the next page and a digest of the whole list this client sees
//! (its profile's and token's tools), sealed (HMAC, the same key as
//! `requestState`) to the caller and good for an hour. A cursor is honoured
//! only if it opens with this server's key for this caller and the list's
//! digest is still the same, so a page never repeats or skips a tool: a
//! cursor that was changed, belongs to another caller or profile, has
//! expired, or was given before a reload changed the list is refused with
//! -32602 and a message saying to list again from the start (the MCP spec:
//! invalid cursors SHOULD be -32602). Replicas with a common state key and
//! the same plugins see the same digest, so a client may page across them.

use crate::asking::StateSeal;
use rmcp::ErrorData;
use rmcp::model::{ListToolsResult, Tool};
use std::time::Duration;

/// Tools on one page unless `[serve] page_size` says otherwise: a folder
/// of a few hundred tools fits on one page, for clients that never page.
pub const DEFAULT_PAGE_SIZE: usize = 1000;

/// The most a page may hold: bounds one answer's size.
pub const MAX_PAGE_SIZE: usize = 10_000;

/// How long a cursor is good for.
const CURSOR_TTL: Duration = Duration::from_secs(3600);

/// What a `nextCursor` holds, sealed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Cursor {
    /// The digest of the names of the list it pages through.
    list: String,
    /// Where the next page starts.
    at: usize,
}

/// The page size `[serve] page_size` asks for, checked.
pub fn page_size(configured: Option<usize>) -> anyhow::Result<usize> {
    match configured {
        None => Ok(DEFAULT_PAGE_SIZE),
        Some(size) if (1..=MAX_PAGE_SIZE).contains(&size) => Ok(size),
        Some(size) => anyhow::bail!("[serve] page_size = {size}: it must be 1 to {MAX_PAGE_SIZE} tools"),
    }
}

/// The digest of a list of tools: their names, in order.
fn digest(tools: &[&Tool]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for tool in tools {
        context.update(tool.name.as_bytes());
        context.update(b"\n");
    }
    context.finish().as_ref()[..16].iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The page of `tools` that `cursor` (none: the first) points at, with the
/// cursor of the next one if any, for the caller `binding` names.
pub fn page(
    tools: &[&Tool],
    cursor: Option<&str>,
    seal: &StateSeal,
    binding: &[u8],
    size: usize,
) -> Result<ListToolsResult, ErrorData> {
    let list = if cursor.is_some() || tools.len() > size { digest(tools) } else { String::new() };
    let at = match cursor {
        None => 0,
        Some(sealed) => {
            let opened: Cursor = seal.open(sealed, binding).ok_or_else(|| {
                ErrorData::invalid_params(
                    "`cursor` is not one this server gave this client for tools/list (it was changed, belongs to \
                     another client or profile, or has expired): list again without a cursor",
                    None,
                )
            })?;
            if opened.list != list || opened.at > tools.len() {
                return Err(ErrorData::invalid_params(
                    "the tool list changed since this cursor was given (a reload): list again without a cursor",
                    None,
                ));
            }
            opened.at
        }
    };
    let end = (at + size).min(tools.len());
    let mut result = ListToolsResult::with_all_items(tools[at..end].iter().map(|tool| (*tool).clone()).collect());
    if end < tools.len() {
        let next = seal
            .seal(&Cursor { list, at: end }, binding, CURSOR_TTL)
            .ok_or_else(|| ErrorData::internal_error("the next page's cursor could not be sealed", None))?;
        result.next_cursor = Some(next);
    }
    Ok(result)
}
