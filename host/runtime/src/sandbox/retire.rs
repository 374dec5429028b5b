//! A finished call's store, dropped off the call's path.
//!
//! Dropping a store hands its instance's memories back to the pool, which
//! resets them there and then: for an interpreter's heap (Python, JavaScript:
//! megabytes written per call) the dirty-page scan and the copies back from
//! the image are a third of the call. A call of a [`Flavor::Full`] engine
//! therefore gives its store to one thread of the process that drops it,
//! and its answer goes back meanwhile. The instance was never reused: the
//! pool hands a slot out again only after it is reset, and a call never
//! waits for a retired store.
//!
//! At most [`RETIRING`] retired stores are alive at once in the process
//! (queued or being dropped); past that, or when the thread could not be
//! started, a call drops its store itself, as before. A pool therefore
//! needs at most [`RETIRING`] slots more than the calls it runs at once
//! (`engine::build` adds them). A lean engine's store (a small memory zeroed
//! in a few microseconds) is dropped in place: handing it over would cost
//! about as much.
//!
//! The thread runs below every call (Linux's `SCHED_IDLE`): a reset gives
//! way to a call for a core. One call at a time, the reset runs beside it on
//! the other core; when calls keep every core busy the two retired stores
//! wait, and calls drop their own, which measured faster than a reset
//! competing with the calls for the cores (BENCHMARKS.md).
//!
//! [`Flavor::Full`]: crate::engine::Flavor::Full

use super::HostState;
use crate::engine::RETIRING;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::Sender;
use wasmtime::Store;

/// Retired stores queued or being dropped now.
static ALIVE: AtomicU32 = AtomicU32::new(0);

/// The sending end of the dropping thread's queue, once started (`None`
/// when it could not be).
static QUEUE: OnceLock<Option<Sender<Store<HostState>>>> = OnceLock::new();

/// Drops `store` on the retiring thread, or here when [`RETIRING`] stores
/// are already waiting for it.
pub(super) fn retire(store: Store<HostState>) {
    let queue = QUEUE.get_or_init(|| {
        let (send, receive) = std::sync::mpsc::channel::<Store<HostState>>();
        let started = std::thread::Builder::new().name("toolhost-retire".to_owned()).spawn(move || {
            below_every_call();
            for store in receive {
                drop(store);
                ALIVE.fetch_sub(1, Ordering::AcqRel);
            }
        });
        started.ok().map(|_| send)
    });
    let Some(queue) = queue else { return };
    if ALIVE.fetch_add(1, Ordering::AcqRel) >= RETIRING {
        ALIVE.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    if let Err(unsent) = queue.send(store) {
        ALIVE.fetch_sub(1, Ordering::AcqRel);
        drop(unsent.0);
    }
}

/// Puts the calling thread below every other (`SCHED_IDLE`): where a reset
/// and a call share a core, the call runs and the kernel moves the reset to
/// an idle core. Without it (refused, or not Linux) the thread runs as any.
fn below_every_call() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param`; 0 names the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            tracing::debug!("the retiring thread could not lower its priority: {}", std::io::Error::last_os_error());
        }
    }
}
