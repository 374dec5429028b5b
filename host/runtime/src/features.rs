//! What a component is built on, read from its bytes before anything is
//! compiled (so `toolhost inspect` can say it even of a component that does
//! not load): the WASI versions it imports and the component model's async
//! features (WASI 0.3's async ABI) it uses.

use std::collections::BTreeSet;
use wasmparser::{CanonicalFunction, CanonicalOption, Parser, Payload};

/// The WASI versions and async features a component uses.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Uses {
    /// The WASI versions its `wasi:` imports name (`0.2`, `0.3`), oldest first.
    pub wasi: Vec<String>,
    /// The async features it uses, in words (`async exports`, `futures`, …),
    /// in a fixed order; empty for a component of the synchronous ABI only.
    pub async_features: Vec<&'static str>,
    /// Whether every canonical function is one the synchronous ABI has
    /// (lift, lower, resource new/drop/rep without the async option): such a
    /// component runs without the engine's concurrency support.
    #[serde(skip)]
    pub synchronous: bool,
    /// The largest initial size, in bytes, of a memory its core modules
    /// define; `None` when the binary did not parse to its end.
    #[serde(skip)]
    pub largest_memory: Option<u64>,
}

/// Each async feature, as [`Uses::async_features`] names it, in order.
const ASYNC_FEATURES: [&str; 8] =
    ["async exports", "async imports", "tasks", "futures", "streams", "error contexts", "backpressure", "threads"];

/// What `wasm` uses. A binary that does not parse is read as far as it goes.
pub fn scan(wasm: &[u8]) -> Uses {
    let mut versions = BTreeSet::new();
    let mut used = [false; ASYNC_FEATURES.len()];
    let mut synchronous = true;
    let mut largest = Some(0u64);
    for payload in Parser::new(0).parse_all(wasm) {
        let Ok(payload) = payload else {
            largest = None;
            break;
        };
        match payload {
            Payload::MemorySection(memories) => {
                for memory in memories {
                    let bytes = memory.ok().and_then(|memory| {
                        let page = 1u64.checked_shl(memory.page_size_log2.unwrap_or(16))?;
                        memory.initial.checked_mul(page)
                    });
                    largest = largest.zip(bytes).map(|(largest, bytes)| largest.max(bytes));
                }
            }
            Payload::ComponentImportSection(imports) => {
                for import in imports.into_iter().flatten() {
                    if let Some(version) = wasi_version(import.name.name) {
                        versions.insert(version);
                    }
                }
            }
            Payload::ComponentCanonicalSection(functions) => {
                for function in functions {
                    let Ok(function) = function else {
                        synchronous = false;
                        continue;
                    };
                    if let Some(feature) = feature_of(&function) {
                        used[feature] = true;
                    }
                    synchronous &= is_synchronous(&function);
                }
            }
            _ => {}
        }
    }
    Uses {
        wasi: versions.into_iter().collect(),
        async_features: ASYNC_FEATURES.iter().zip(used).filter(|(_, used)| *used).map(|(name, _)| *name).collect(),
        synchronous,
        largest_memory: largest,
    }
}

/// Whether the synchronous ABI has `function` (anything else, including
/// kinds this scan does not know, needs the concurrency support).
fn is_synchronous(function: &CanonicalFunction) -> bool {
    use CanonicalFunction as F;
    let plain = |options: &[CanonicalOption]| !options.iter().any(|option| matches!(option, CanonicalOption::Async));
    match function {
        F::Lift { options, .. } | F::Lower { options, .. } => plain(options),
        F::ResourceNew { .. } | F::ResourceDrop { .. } | F::ResourceRep { .. } => true,
        _ => false,
    }
}

/// `0.3` for `wasi:http/types@0.3.2`; `None` for an import outside WASI or
/// without a version.
fn wasi_version(import: &str) -> Option<String> {
    let (package, version) = import.strip_prefix("wasi:")?.split_once('@')?;
    if package.is_empty() {
        return None;
    }
    let mut parts = version.split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    let numeric = |part: &str| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
    let minor: String = minor.chars().take_while(char::is_ascii_digit).collect();
    (numeric(major) && numeric(&minor)).then(|| format!("{major}.{minor}"))
}

/// Which of [`ASYNC_FEATURES`] a canonical function is (its index).
fn feature_of(function: &CanonicalFunction) -> Option<usize> {
    use CanonicalFunction as F;
    let is_async = |options: &[CanonicalOption]| options.iter().any(|option| matches!(option, CanonicalOption::Async));
    Some(match function {
        F::Lift { options, .. } if is_async(options) => 0,
        F::Lower { options, .. } if is_async(options) => 1,
        F::Lift { .. } | F::Lower { .. } => return None,
        F::TaskReturn { .. }
        | F::TaskCancel
        | F::ContextGet { .. }
        | F::ContextSet { .. }
        | F::SubtaskDrop
        | F::SubtaskCancel { .. }
        | F::WaitableSetNew
        | F::WaitableSetWait { .. }
        | F::WaitableSetPoll { .. }
        | F::WaitableSetDrop
        | F::WaitableJoin
        | F::ThreadYield => 2,
        F::FutureNew { .. }
        | F::FutureRead { .. }
        | F::FutureWrite { .. }
        | F::FutureCancelRead { .. }
        | F::FutureCancelWrite { .. }
        | F::FutureDropReadable { .. }
        | F::FutureDropWritable { .. } => 3,
        F::StreamNew { .. }
        | F::StreamRead { .. }
        | F::StreamWrite { .. }
        | F::StreamCancelRead { .. }
        | F::StreamCancelWrite { .. }
        | F::StreamDropReadable { .. }
        | F::StreamDropWritable { .. } => 4,
        F::ErrorContextNew { .. } | F::ErrorContextDebugMessage { .. } | F::ErrorContextDrop => 5,
        F::BackpressureInc | F::BackpressureDec => 6,
        F::ThreadSpawnRef { .. }
        | F::ThreadSpawnIndirect { .. }
        | F::ThreadAvailableParallelism
        | F::ThreadIndex
        | F::ThreadNewIndirect { .. }
        | F::ThreadSuspend
        | F::ThreadResumeLater
        | F::ThreadSuspendThenResume
        | F::ThreadYieldThenResume
        | F::ThreadSuspendThenPromote
        | F::ThreadYieldThenPromote => 7,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_wasi_versions_of_every_spelling() {
        assert_eq!(wasi_version("wasi:http/types@0.3.2").as_deref(), Some("0.3"));
        assert_eq!(wasi_version("wasi:cli/environment@0.2.9").as_deref(), Some("0.2"));
        assert_eq!(wasi_version("wasi:http/types@0.3.0-rc-2026-03-15").as_deref(), Some("0.3"));
        assert_eq!(wasi_version("wasi:config/store@0.2.0-draft").as_deref(), Some("0.2"));
    }

    #[test]
    fn rejects_imports_outside_wasi_or_without_a_version() {
        assert_eq!(wasi_version("acme:shop/inventory@1.0.0"), None);
        assert_eq!(wasi_version("wasi:cli/environment"), None);
        assert_eq!(wasi_version("wasi:@0.2.0"), None);
        assert_eq!(wasi_version("wasi:x/y@zero.two"), None);
    }

    #[test]
    fn a_binary_that_is_not_wasm_uses_nothing() {
        for bytes in [&b"not wasm"[..], &[]] {
            let uses = scan(bytes);
            assert!(uses.wasi.is_empty() && uses.async_features.is_empty(), "{uses:?}");
            assert_eq!(uses.largest_memory, None, "a binary that does not parse has no known memory");
        }
    }
}
