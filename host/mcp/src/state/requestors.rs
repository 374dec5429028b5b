//! `[serve] max_calls_per_requestor` and `max_questions_per_requestor` in
//! the shared store: one requestor (a token's subject, else a 2025-11-25
//! session, the same on every replica) holds at most that many call slots
//! and waiting questions over all the replicas together.
//!
//! Each is a concurrency cap of the shared quotas ([`super::quotas`]): a
//! sorted set of holders scored by when their lease ends, checked and taken
//! in one atomic script, renewed while held, given back when dropped, and
//! freed by lease expiry when the replica holding it dies. The requestor is
//! hashed into the key, so a subject or session id never appears in a key.
//!
//! A call whose requestor has no free slot waits, asking the store again
//! every few hundred milliseconds at most (no queue: the first to ask after
//! a slot is given back takes it), no longer than its bound.

use super::Store;
use super::quotas::StoreQuotas;
use std::time::{Duration, Instant};
use toolhost_catalog::quota::{Limit, SharedAdmission, SharedQuotas};

/// The first pause before asking again for a busy requestor's slot.
const FIRST_PAUSE: Duration = Duration::from_millis(20);
/// The longest pause between two asks.
const LONGEST_PAUSE: Duration = Duration::from_millis(250);

/// A place held in the store until dropped (renewed meanwhile).
pub type Held = Box<dyn Send + Sync>;

/// Why no shared place was taken.
#[derive(Debug)]
pub enum NotHeld {
    /// The requestor holds every place it may (questions), or none came
    /// free within the bound (calls).
    Full,
    /// The store could not be asked: the reason, in one line.
    Unavailable(String),
}

/// The per-requestor limits of every replica, kept in the store.
pub struct SharedRequestors {
    quotas: StoreQuotas,
}

impl SharedRequestors {
    pub fn new(store: Store) -> SharedRequestors {
        SharedRequestors { quotas: StoreQuotas::new(store) }
    }

    /// With the store unreachable: whether the replica's own limits apply
    /// (`on_unavailable = "open"`) rather than a refusal.
    pub fn fail_open(&self) -> bool {
        self.quotas.fail_open()
    }

    /// Waits, at most `bound`, for one of `requestor`'s `max` call slots.
    pub async fn call_slot(&self, requestor: &str, max: usize, bound: Duration) -> Result<Held, NotHeld> {
        let limit = [limit("calls", requestor, max)];
        let deadline = Instant::now() + bound;
        let mut pause = FIRST_PAUSE;
        loop {
            match self.quotas.admit(&limit).await {
                SharedAdmission::Admitted(held) => return Ok(held),
                SharedAdmission::Refused(_) => {}
                SharedAdmission::Unavailable(reason) => return Err(NotHeld::Unavailable(reason)),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NotHeld::Full);
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }

    /// Takes `count` of `requestor`'s `max` places for waiting questions,
    /// all or none (a place taken before one is refused is given back).
    pub async fn questions(&self, requestor: &str, max: usize, count: usize) -> Result<Vec<Held>, NotHeld> {
        if count > max {
            return Err(NotHeld::Full);
        }
        let limit = [limit("questions", requestor, max)];
        let mut held = Vec::with_capacity(count);
        for _ in 0..count {
            match self.quotas.admit(&limit).await {
                SharedAdmission::Admitted(place) => held.push(place),
                SharedAdmission::Refused(_) => return Err(NotHeld::Full),
                SharedAdmission::Unavailable(reason) => return Err(NotHeld::Unavailable(reason)),
            }
        }
        Ok(held)
    }
}

/// The cap of `requestor`'s `what` (`calls`, `questions`): keyed by a hash
/// of the requestor, so no subject or session id is written in a key.
fn limit(what: &str, requestor: &str, max: usize) -> Limit {
    let digest = ring::digest::digest(&ring::digest::SHA256, requestor.as_bytes());
    let hex: String = digest.as_ref()[..16].iter().map(|byte| format!("{byte:02x}")).collect();
    Limit { key: format!("requestor:{what}:{hex}"), scope: "this client".to_owned(), rate: None, cap: Some(max) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requestor_s_key_is_a_hash_apart_from_the_quotas_keys() {
        let alice = limit("calls", "principal alice", 2);
        assert_eq!(alice.cap, Some(2));
        assert!(alice.key.starts_with("requestor:calls:") && alice.key.len() == "requestor:calls:".len() + 32);
        assert!(!alice.key.contains("alice"));
        assert_eq!(alice.key, limit("calls", "principal alice", 9).key, "the same place whatever the limit");
        assert_ne!(alice.key, limit("calls", "principal bob", 2).key);
        assert_ne!(limit("questions", "principal alice", 2).key, alice.key);
        // A hostile session id (separators, wildcards) never reaches a key.
        assert!(!limit("calls", "session http:a:*:b", 1).key.contains('*'));
    }
}
