//! What one call did on the network: its request count and the refusals
//! kept for its `CallReport` ([`Ledger`]), shared by the call's requests and
//! sockets ([`SharedLedger`]).

use crate::outcome::{CONTACTS_LIMIT, Contact, Refusal, RefusalReason};
use std::sync::{Arc, Mutex};
use toolhost_grants::Granted;

/// Refusals kept per call; further ones are counted.
pub const REFUSALS_LIMIT: usize = 64;

/// What one call did on the network.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Requests admitted (and sent, or attempted).
    pub requests: u32,
    /// Response body bytes handed to the guest.
    pub response_bytes: u64,
    /// Request body bytes sent.
    pub request_bytes: u64,
    /// What was refused, first [`REFUSALS_LIMIT`] of them.
    pub refused: Vec<Refusal>,
    /// Refusals past the limit.
    pub more_refused: usize,
    /// The requests admitted, first [`CONTACTS_LIMIT`] of them, each with
    /// its status and bytes.
    pub contacts: Vec<Contact>,
    /// Requests admitted past that.
    pub more_contacts: u32,
}

impl Ledger {
    /// Notes an admitted request; its place in [`Ledger::contacts`], when kept.
    pub(super) fn contact(&mut self, contact: Contact) -> Option<usize> {
        if self.contacts.len() < CONTACTS_LIMIT {
            self.contacts.push(contact);
            Some(self.contacts.len() - 1)
        } else {
            self.more_contacts = self.more_contacts.saturating_add(1);
            None
        }
    }

    /// Notes the status of request `index`'s response.
    pub(super) fn answered(&mut self, index: Option<usize>, status: u16) {
        if let Some(contact) = index.and_then(|index| self.contacts.get_mut(index)) {
            contact.status = Some(status);
        }
    }

    /// Adds `sent` request bytes and `received` response bytes to request `index`.
    pub(super) fn count(&mut self, index: Option<usize>, sent: u64, received: u64) {
        if let Some(contact) = index.and_then(|index| self.contacts.get_mut(index)) {
            contact.sent += sent;
            contact.received += received;
        }
    }
}

/// A call's ledger, shared with the tasks that carry its requests.
#[derive(Clone)]
pub(crate) struct SharedLedger {
    plugin: Arc<str>,
    /// The plugin's grants, whose secret values are scrubbed from targets (a
    /// plugin could put one in a host name).
    pub(super) granted: Arc<Granted>,
    inner: Arc<Mutex<Ledger>>,
}

impl SharedLedger {
    pub(crate) fn new(plugin: Arc<str>, granted: Arc<Granted>) -> SharedLedger {
        SharedLedger { plugin, granted, inner: Arc::default() }
    }

    /// The plugin's secrets scrubbed from `text` (a host name it chose).
    pub(super) fn scrub(&self, text: String) -> String {
        self.granted.redactor.scrub(text)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn refuse(&self, target: String, reason: RefusalReason) {
        let target = self.granted.redactor.scrub(target);
        let reason = match reason {
            RefusalReason::CredentialUnavailable { why } => {
                RefusalReason::CredentialUnavailable { why: self.granted.redactor.scrub(why) }
            }
            other => other,
        };
        let refusal = Refusal { target, reason };
        tracing::info!(plugin = &*self.plugin, "refused {refusal}");
        let mut ledger = self.lock();
        if ledger.refused.len() < REFUSALS_LIMIT {
            ledger.refused.push(refusal);
        } else {
            ledger.more_refused += 1;
        }
    }

    /// Takes what was recorded.
    pub(crate) fn take(&self) -> Ledger {
        std::mem::take(&mut *self.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contact() -> Contact {
        Contact {
            scheme: "https",
            host: "api.example.com".to_owned(),
            port: 443,
            method: "GET".to_owned(),
            status: None,
            sent: 0,
            received: 0,
        }
    }

    #[test]
    fn contacts_are_kept_to_the_limit_and_the_rest_counted() {
        let mut ledger = Ledger::default();
        let first = ledger.contact(contact());
        assert_eq!(first, Some(0));
        ledger.answered(first, 200);
        ledger.count(first, 5, 7);
        ledger.count(first, 0, 3);
        assert_eq!(
            (ledger.contacts[0].status, ledger.contacts[0].sent, ledger.contacts[0].received),
            (Some(200), 5, 10)
        );
        for _ in 1..CONTACTS_LIMIT {
            assert!(ledger.contact(contact()).is_some());
        }
        let past = ledger.contact(contact());
        assert_eq!(past, None);
        // Bytes of a request past the limit go nowhere (they are in the totals).
        ledger.count(past, 1, 1);
        ledger.answered(past, 500);
        assert_eq!(ledger.contacts.len(), CONTACTS_LIMIT);
        assert_eq!(ledger.more_contacts, 1);
    }
}
