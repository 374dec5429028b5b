//! The MCP revisions whose messages toolhost rewrites around rmcp, behind one
//! interface ([`Revision`]). The transports (stdio in `framing`, HTTP in
//! `http`) call the functions here on every message they pass (is a method
//! reserved, is a request renamed, is its answer adjusted) and never learn
//! what a revision rewrites or why.
//!
//! A revision rmcp does not model is one more module here implementing
//! [`Revision`] and one more entry in [`REVISIONS`]; neither transport nor
//! the request handler changes. Today that is MCP 2025-11-25's experimental
//! tasks ([`tasks2025`]).
//!
//! The modules here sit above the request handler (`server`): they may use
//! it, and it does not name them (the import graph is checked, see
//! ARCHITECTURE.md).

pub mod tasks2025;

use serde_json::Value;

/// One MCP revision's rewriting of the messages that pass a transport.
pub(crate) trait Revision: Sync {
    /// The protocol revision (`2025-11-25`), as `MCP-Protocol-Version` and
    /// `initialize` name it.
    fn version(&self) -> &'static str;

    /// The method prefix of the requests it renames for toolhost's own
    /// handler; a client's own use of it is refused.
    fn prefix(&self) -> &'static str;

    /// The renamed form of `message`, for a session known to use this
    /// revision's rewriting, if it is a request rmcp would otherwise take for
    /// something else.
    fn renamed(&self, message: &Value) -> Option<Vec<u8>>;

    /// Whether the answer to `message` is adjusted: the revision's own number
    /// for what it adjusts, and whether it is adjusted before the session is
    /// known to use the revision (the answer that tells).
    fn watch(&self, message: &Value) -> Option<(u8, bool)>;

    /// Adjusts the answer to a request [`Revision::watch`] gave `kind`; true
    /// when this answer shows the session uses the revision's rewriting.
    fn adjust(&self, kind: u8, message: &mut Value) -> bool;
}

/// Every revision rewritten here.
pub(crate) static REVISIONS: &[&dyn Revision] = &[&tasks2025::Tasks2025];

/// A request whose answer a revision adjusts on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watch {
    /// Its revision's place in [`REVISIONS`].
    revision: usize,
    /// What the revision adjusts.
    kind: u8,
    /// Adjusted before the session is known to use the revision.
    early: bool,
}

impl Watch {
    /// Whether the answer is adjusted even before the session is known to
    /// use the revision (it is the answer that says so).
    pub(crate) fn early(self) -> bool {
        self.early
    }
}

/// Whether a session of protocol `version` gets a revision's rewriting.
pub(crate) fn rewrites(version: &str) -> bool {
    REVISIONS.iter().any(|revision| revision.version() == version)
}

/// Whether `method` is reserved for the requests a revision renames.
pub(crate) fn reserved(method: &str) -> bool {
    REVISIONS.iter().any(|revision| method.starts_with(revision.prefix()))
}

/// The renamed form of `message`, for a session that uses a revision's rewriting.
pub(crate) fn renamed(message: &Value) -> Option<Vec<u8>> {
    REVISIONS.iter().find_map(|revision| revision.renamed(message))
}

/// Whether `message`'s answer is adjusted.
pub(crate) fn watch(message: &Value) -> Option<Watch> {
    REVISIONS
        .iter()
        .enumerate()
        .find_map(|(revision, rewriting)| rewriting.watch(message).map(|(kind, early)| Watch { revision, kind, early }))
}

/// Completes the answer to a watched request; true when the answer shows the
/// session uses the revision's rewriting.
pub(crate) fn adjust(watch: Watch, message: &mut Value) -> bool {
    REVISIONS[watch.revision].adjust(watch.kind, message)
}

/// [`adjust`] on one JSON-RPC line (stdio); the line to write (ending in a
/// newline) and whether the session uses these tasks.
pub(crate) fn adjust_line(watch: Watch, line: &[u8]) -> (Vec<u8>, bool) {
    let Ok(mut message) = serde_json::from_slice::<Value>(line) else { return (line.to_vec(), false) };
    let ours = adjust(watch, &mut message);
    let mut out = serde_json::to_vec(&message).unwrap_or_else(|_| line.to_vec());
    out.push(b'\n');
    (out, ours)
}

/// [`adjust`] on an HTTP response body: one JSON message, or an event
/// stream whose `data:` lines are messages.
pub(crate) fn adjust_body(watch: Watch, body: &[u8], event_stream: bool) -> Vec<u8> {
    if !event_stream {
        return match serde_json::from_slice::<Value>(body) {
            Ok(mut message) => {
                adjust(watch, &mut message);
                serde_json::to_vec(&message).unwrap_or_else(|_| body.to_vec())
            }
            Err(_) => body.to_vec(),
        };
    }
    let mut out = Vec::with_capacity(body.len() + 128);
    for line in body.split_inclusive(|&byte| byte == b'\n') {
        let data = line.strip_prefix(b"data:").map(|data| data.strip_prefix(b" ").unwrap_or(data));
        match data.and_then(|data| serde_json::from_slice::<Value>(data.trim_ascii_end()).ok()) {
            Some(mut message) if message.get("result").is_some() => {
                adjust(watch, &mut message);
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&serde_json::to_vec(&message).unwrap_or_default());
                out.extend_from_slice(if line.ends_with(b"\r\n") { b"\r\n" } else { b"\n" });
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}
