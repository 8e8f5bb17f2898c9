//! UD peers through RDMA CM (the UDP port space): the client asks the listener for its QP
//! (SIDR), and learns its number, its Q_Key and the path to it; the server answers with its
//! QP's number. No connection exists afterwards; the ids only carry the lookup.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use super::{check, event_name, CmId, E};
use crate::attention::Attention;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{AddressHandle, ProtectionDomain};

/// A UD peer as the CM describes it: where its QP is and the Q_Key its QP takes.
#[derive(Clone, Copy)]
pub struct UdPeer {
    pub(super) ah_attr: sys::ibv_ah_attr,
    /// The peer's QP number.
    pub qpn: u32,
    /// The Q_Key to send to it with.
    pub qkey: u32,
}

impl std::fmt::Debug for UdPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdPeer")
            .field("qpn", &self.qpn)
            .field("qkey", &self.qkey)
            .finish()
    }
}

impl UdPeer {
    /// An address handle along the CM's path to the peer.
    pub fn address_handle(&self, pd: &Arc<ProtectionDomain>) -> Result<Arc<AddressHandle>> {
        AddressHandle::from_attr(pd, self.ah_attr)
    }
}

impl CmId {
    /// A UDP-space id on its own channel, its address and route to `dst` resolved (with the
    /// traffic class `tos`, as [`CmId::resolve`]),
    /// from the local address `src` when given.
    pub fn resolve_ud(
        src: Option<IpAddr>,
        dst: SocketAddr,
        tos: Option<u8>,
        attention: Attention,
    ) -> Result<CmId> {
        Self::resolve_in(src, dst, sys::rdma_port_space::RDMA_PS_UDP, tos, attention)
    }

    /// A UDP-space id listening on `port` of `at` (every address of its family when it is the
    /// unspecified one).
    pub fn listen_ud(at: IpAddr, port: u16, backlog: i32, attention: Attention) -> Result<CmId> {
        Self::listen_in(
            at,
            port,
            backlog,
            sys::rdma_port_space::RDMA_PS_UDP,
            attention,
        )
    }

    /// The Q_Key the CM gives this id's datagrams (what `rdma_init_qp_attr` sets at INIT).
    pub fn ud_qkey(&self) -> Result<u32> {
        let mut attr = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_INIT,
            ..Default::default()
        };
        let mut mask = 0i32;
        // SAFETY: the id is alive and bound to a device; out-pointers are valid.
        let rc = unsafe { sys::rdma_init_qp_attr(self.raw.as_ptr(), &mut attr, &mut mask) };
        check(rc, "rdma_init_qp_attr")?;
        Ok(attr.qkey)
    }

    /// Active side: asks the listener this id resolved for its QP, naming ours (`qpn`). A
    /// rejection (no listener yet) is [`Error::Config`], so that a caller may retry.
    pub fn connect_ud(&mut self, qpn: u32, timeout: Duration) -> Result<UdPeer> {
        let mut cp = sys::rdma_conn_param {
            qp_num: qpn,
            ..Default::default()
        };
        // SAFETY: the id is alive with its route resolved; `cp` is valid for the call.
        let rc = unsafe { sys::rdma_connect(self.raw.as_ptr(), &mut cp) };
        check(rc, "rdma_connect")?;
        let ev = self.channel.next(Some(timeout))?;
        match (ev.kind, ev.ud) {
            (E::RDMA_CM_EVENT_ESTABLISHED, Some(peer)) => Ok(peer),
            (E::RDMA_CM_EVENT_REJECTED | E::RDMA_CM_EVENT_UNREACHABLE, _) => {
                Err(Error::config(format!(
                    "RDMA CM: the server did not answer the UD lookup ({}, status {}): not \
                     listening yet?",
                    event_name(ev.kind),
                    ev.status
                )))
            }
            (other, _) => Err(Error::Protocol(format!(
                "RDMA CM: {} (status {}) instead of the UD peer's QP",
                event_name(other),
                ev.status
            ))),
        }
    }

    /// Passive side: answers this request with our QP's number.
    pub fn accept_ud(&mut self, qpn: u32) -> Result<()> {
        let mut cp = sys::rdma_conn_param {
            qp_num: qpn,
            ..Default::default()
        };
        // SAFETY: the id is a live request; `cp` is valid for the call.
        let rc = unsafe { sys::rdma_accept(self.raw.as_ptr(), &mut cp) };
        check(rc, "rdma_accept")
    }
}
