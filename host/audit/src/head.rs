//! Batch signing (`[audit] batch`, format `v: 2`): lines are chained as
//! ever but not signed one by one; every `batch` lines or `batch_interval`
//! (whichever comes first, and always before a checkpoint, a rotation or
//! the writer's end) the writer appends a signed tree head over the lines
//! since the last signed line:
//!
//! ```json
//! {"key":"sha256:…","kind":"head","prev":"…","prev_head":"…","root":"…","seq":43,"sig":"…","time":"…","tree_size":42,"v":2}
//! ```
//!
//! `root` is the RFC 6962 Merkle root ([`crate::merkle`]) of the lines
//! `seq - tree_size` to `seq - 1` (each leaf the line's bytes without its
//! line break); `prev` chains the head like any line; `prev_head` is the
//! digest of the signed line before it (the previous head, or a line signed
//! alone by `batch = 1` or an older toolhost; 64 zeros when there is none).
//!
//! A receipt for a batched line is `{"line": LINE, "proof": [HEX…],
//! "head": HEAD}`: the line, its inclusion proof (nearest sibling first)
//! and the signed head, checked with the public key alone.

use crate::canonical::{self, Object};
use crate::keys::{SigningKey, hex};
use crate::merkle::{self, Hash, Tree};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// The format version of batched lines and their heads.
pub const VERSION: u64 = 2;

/// Lines per head when the config does not say.
pub const DEFAULT_BATCH: usize = 256;

/// The longest a line waits for its head when the config does not say.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);

/// The most lines one head may cover (`[audit] batch`).
pub const MAX_BATCH: usize = 1 << 16;

/// `record` as a batched line after `prev` (not signed: its head will
/// vouch for it), without its line break, and its digest.
pub fn plain(record: &mut Object, seq: u64, prev: &str) -> (Vec<u8>, String) {
    record.remove("sig");
    record.remove("key");
    record.u64("v", VERSION);
    record.u64("seq", seq);
    record.str("prev", prev);
    let line = record.to_vec();
    let digest = hex(&Sha256::digest(&line));
    (line, digest)
}

/// The signed head at `seq` (after `prev`) over `tree`, after the signed
/// line `prev_head`, and its digest.
pub fn seal(seq: u64, prev: &str, tree: &Tree, prev_head: &str, key: &SigningKey) -> (Vec<u8>, String) {
    let mut map = Map::new();
    map.insert("kind".to_owned(), json!("head"));
    map.insert("v".to_owned(), json!(VERSION));
    map.insert("seq".to_owned(), json!(seq));
    map.insert("prev".to_owned(), json!(prev));
    map.insert("tree_size".to_owned(), json!(tree.size()));
    map.insert("root".to_owned(), json!(hex(&tree.root())));
    map.insert("prev_head".to_owned(), json!(prev_head));
    map.insert("time".to_owned(), json!(crate::line::now()));
    map.insert("key".to_owned(), json!(key.public().fingerprint()));
    let mut value = Value::Object(map);
    let signature = key.sign(&canonical::to_vec(&value));
    value["sig"] = json!(base64::engine::general_purpose::STANDARD.encode(signature));
    let line = canonical::to_vec(&value);
    let digest = hex(&Sha256::digest(&line));
    (line, digest)
}

/// The lines written since the last signed line, waiting for their head.
#[derive(Default)]
pub(crate) struct Batch {
    /// Their leaf hashes, in order.
    leaves: Vec<Hash>,
    /// The calls waiting for a receipt: the leaf's index, its line.
    waiting: Vec<(usize, Value, tokio::sync::oneshot::Sender<Value>)>,
    /// When the first of them was written.
    opened: Option<Instant>,
}

impl Batch {
    /// Adds the line just written (its bytes without the line break); with
    /// `receipt`, its caller waits for the head.
    pub(crate) fn push(&mut self, line: &[u8], receipt: Option<tokio::sync::oneshot::Sender<Value>>) {
        if let Some(receipt) = receipt
            && let Ok(value) = serde_json::from_slice(line)
        {
            self.waiting.push((self.leaves.len(), value, receipt));
        }
        self.leaves.push(merkle::leaf(line));
        self.opened.get_or_insert_with(Instant::now);
    }

    pub(crate) fn len(&self) -> usize {
        self.leaves.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Whether a caller waits for this batch's head.
    pub(crate) fn awaited(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// When the head is due, `interval` after the first line.
    pub(crate) fn deadline(&self, interval: Duration) -> Option<Instant> {
        self.opened.map(|opened| opened + interval)
    }

    /// The tree over the batch, and who waits for a receipt; the batch is
    /// then empty.
    pub(crate) fn take(&mut self) -> (Tree, Vec<(usize, Value, tokio::sync::oneshot::Sender<Value>)>) {
        self.opened = None;
        (Tree::new(std::mem::take(&mut self.leaves)), std::mem::take(&mut self.waiting))
    }
}

/// The receipt of a batched `line` at `index` of `tree`, under `head`.
pub(crate) fn receipt(line: Value, tree: &Tree, index: usize, head: &Value) -> Value {
    let proof: Vec<Value> = tree.proof(index).iter().map(|hash| Value::String(hex(hash))).collect();
    json!({"line": line, "proof": proof, "head": head})
}
