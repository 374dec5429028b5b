//! `wasi:sockets` for a call: TCP only to the granted hosts and ports, each
//! refused connection recorded in the call's ledger.

use super::{SharedLedger, resolve};
use crate::outcome::RefusalReason;
use std::sync::Arc;
use toolhost_grants::network::{NetworkGrant, SocketCheck};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::sockets::SocketAddrUse;

/// Sets up `wasi:sockets` for a call. TCP connections go only to the granted
/// hosts and ports, and only when the grant says `sockets = true` (then DNS
/// lookups are on too, which TCP to a name needs); UDP and listening stay
/// off. TCP is switched on even without the grant so that a refused connection
/// reaches the check below, which refuses it before any system call and
/// records its address in the call's refusals.
pub(crate) fn configure_sockets(wasi: &mut WasiCtxBuilder, grant: &Arc<NetworkGrant>, ledger: &SharedLedger) {
    wasi.allow_udp(false).allow_tcp(true).allow_ip_name_lookup(grant.sockets);
    let grant = grant.clone();
    let ledger = ledger.clone();
    wasi.socket_addr_check(move |address, usage| {
        let grant = grant.clone();
        let ledger = ledger.clone();
        Box::pin(async move {
            let refusal = match usage {
                // Connecting binds implicitly to the unspecified address and an
                // ephemeral port; no other bind is allowed.
                SocketAddrUse::TcpBind if address.ip().is_unspecified() && address.port() == 0 => return true,
                SocketAddrUse::TcpConnect => {
                    // Resolving runs on its own task so this future stays `Sync`.
                    let check = tokio::spawn(async move { grant.check_socket(address, resolve).await }).await;
                    match check.unwrap_or(SocketCheck::NotGranted) {
                        SocketCheck::Allowed => return true,
                        SocketCheck::SocketsOff => RefusalReason::SocketsNotGranted,
                        SocketCheck::NotGranted => RefusalReason::NotGranted,
                        SocketCheck::Private { allow } => {
                            RefusalReason::PrivateAddress { address: address.ip(), allow: allow.to_string() }
                        }
                    }
                }
                _ => RefusalReason::ListenOrBind,
            };
            ledger.refuse(format!("tcp {address}"), refusal);
            false
        })
    });
}
