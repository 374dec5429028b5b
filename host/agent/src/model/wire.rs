//! The one interface every provider protocol implements ([`Wire`]): how a
//! conversation becomes a request (what earlier replies carried, replayed as
//! the provider wants it back), how the request is authorized, and how a
//! reply is read, whole or streamed. `ModelClient` keeps what is common
//! (retries, timeouts, errors) and asks `Protocol::wire` (`protocol.rs`) for
//! the rest, so a provider's quirk is fixed in its own file and a new
//! protocol is one more file and one more `Protocol` case.

use super::sse::Events;
use super::{ApiKey, Conversation, Delta, Endpoint, Failure, ProviderState, Reply, RequestOptions, Searched, ToolSpec};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// A streamed reply being read.
pub(super) type Reading<'a> = Pin<Box<dyn Future<Output = Result<Reply, Failure>> + Send + 'a>>;

/// One provider protocol.
pub(super) trait Wire: Sync {
    /// Its name in messages.
    fn title(&self) -> &'static str;

    /// The URL and body of a request for `conversation` with `tools`.
    fn request(
        &self,
        endpoint: &Endpoint,
        options: &RequestOptions,
        conversation: &Conversation,
        tools: &[ToolSpec],
    ) -> (String, Value);

    /// `request` carrying `key` (and whatever else the protocol requires of
    /// every request): `Authorization: Bearer KEY` unless the protocol says
    /// otherwise.
    fn authorize(&self, request: reqwest::RequestBuilder, key: Option<&ApiKey>) -> reqwest::RequestBuilder {
        match key {
            Some(key) => request.bearer_auth(key.expose()),
            None => request,
        }
    }

    /// Whether the provider searches deferred tools itself (a `ToolSpec`
    /// with `defer` is then sent for it to find, not listed in full).
    fn native_search(&self) -> bool {
        false
    }

    /// Headers a request with this `body` needs beyond `authorize`'s (a
    /// beta feature the body uses).
    fn headers(&self, _body: &Value) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// The searches the provider ran itself for a reply (see
    /// `native_search`), as they came in its `state`.
    fn searches(&self, _state: &ProviderState) -> Vec<Searched> {
        Vec::new()
    }

    /// The environment variable a key for this protocol is read from.
    fn key_variable(&self) -> &'static str;

    /// Where a refused key comes from, for the error that says so.
    fn key_hint(&self) -> String {
        format!("{} (or `api_key` in the config's [providers] table)", self.key_variable())
    }

    /// A whole (not streamed) reply.
    fn parse_reply(&self, value: &Value) -> Result<Reply, Failure>;

    /// A streamed reply, its text reported to `on_text` as it comes.
    fn read_stream<'a>(&'a self, events: Events, on_text: &'a mut (dyn FnMut(Delta<'_>) + Send)) -> Reading<'a>;
}
