//! Which [`Wire`] implements each [`Protocol`]: the one place that names
//! every provider protocol's file. The wires themselves name only the
//! interface (`wire.rs`), never this list.

use super::Protocol;
use super::wire::Wire;

impl Protocol {
    /// The protocol's implementation.
    pub(super) fn wire(self) -> &'static dyn Wire {
        match self {
            Protocol::Openai => &super::openai::ChatCompletions,
            Protocol::OpenaiResponses => &super::responses::Responses,
            Protocol::Anthropic => &super::anthropic::Messages,
        }
    }
}
