//! A worker thread's verbs objects and how it meets its peer through the registry.

use std::sync::Arc;
use std::time::Duration;

use super::common::CommonArgs;
use crate::error::{Error, Result};
use crate::hot::{stop_requested, PollTimeout, Postlist, UnsignaledCounter};
use crate::mem::HugeBuffer;
use crate::registry::{Entry, Registry, WaitOptions};
use crate::stats::Counters;
use crate::verbs::{
    Access, AddressHandle, CompletionQueue, MemoryRegion, Port, ProtectionDomain, QpCaps, QpInfo,
    QpType, QueuePair,
};

/// One QP with its CQ, a buffer and the MR over it. Fields drop in order: QP, MR, then the buffer
/// the MR covers.
pub struct Endpoint {
    /// The queue pair.
    pub qp: QueuePair,
    /// The registered buffer.
    pub mr: MemoryRegion,
    /// The memory itself.
    pub buf: HugeBuffer,
    /// Its protection domain (kept for AHs).
    pub pd: Arc<ProtectionDomain>,
}

/// What an endpoint is made of.
#[derive(Debug, Clone, Copy)]
pub struct EndpointSpec {
    /// Transport.
    pub qp_type: QpType,
    /// Send queue depth.
    pub queue_depth: u32,
    /// Receive queue depth (UD receivers pre-post this many RECVs).
    pub recv_depth: u32,
    /// Requested inline limit.
    pub max_inline: u32,
    /// Buffer bytes.
    pub buf_size: usize,
    /// Fill the buffer with this byte.
    pub fill: u8,
    /// Make the QP with `ibv_create_qp_ex`, enabling the `ibv_wr_*` post path.
    pub ex: bool,
}

impl Endpoint {
    /// Opens the port for `port_index`, and makes PD, CQ, QP, buffer and MR on it.
    pub fn new(common: &CommonArgs, port_index: usize, spec: EndpointSpec) -> Result<Endpoint> {
        let port = Port::open_by(common.device.as_deref(), port_index, common.gid_index)?;
        Self::on_port(common, &port, spec)
    }

    /// Like [`Endpoint::new`] on an already opened port (sharing its context).
    pub fn on_port(common: &CommonArgs, port: &Port, spec: EndpointSpec) -> Result<Endpoint> {
        let pd = ProtectionDomain::new(port.context())?;
        let cq = CompletionQueue::new(port.context(), spec.queue_depth + spec.recv_depth)?;
        let caps = QpCaps {
            max_send_wr: spec.queue_depth,
            max_recv_wr: spec.recv_depth.max(1),
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: spec.max_inline,
        };
        let qp = if spec.ex {
            QueuePair::new_ex(&pd, port, &cq, &cq, spec.qp_type, caps)?
        } else {
            QueuePair::new(&pd, port, &cq, &cq, spec.qp_type, caps)?
        };
        let mut buf = HugeBuffer::new(spec.buf_size, common.placement())?;
        // SAFETY: no QP can touch this memory yet: nothing is registered or posted.
        unsafe { buf.as_mut_slice().fill(spec.fill) };
        let access = match spec.qp_type {
            QpType::Rc => {
                Access::LOCAL_WRITE
                    | Access::REMOTE_WRITE
                    | Access::REMOTE_READ
                    | Access::REMOTE_ATOMIC
            }
            QpType::Uc => Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            QpType::Ud => Access::LOCAL_WRITE,
        };
        // SAFETY: `buf` is owned by the Endpoint, whose field order drops `mr` before `buf`.
        let mr = unsafe { MemoryRegion::register(&pd, buf.as_ptr(), buf.len(), access)? };
        Ok(Endpoint { qp, mr, buf, pd })
    }

    /// What a peer needs to reach this endpoint and its buffer.
    pub fn info(&self) -> QpInfo {
        self.qp.info(Some(&self.mr))
    }

    /// An AH towards a UD peer.
    pub fn ah_to(&self, peer: &QpInfo) -> Result<AddressHandle> {
        AddressHandle::new(&self.pd, self.qp.port(), peer)
    }

    /// Reads `len` bytes at `off` of the buffer.
    ///
    /// # Safety
    /// No operation that writes this range may be in flight.
    pub unsafe fn bytes(&self, off: usize, len: usize) -> &[u8] {
        // SAFETY: forwarded to the caller.
        unsafe { &self.buf.as_slice()[off..off + len] }
    }
}

fn waiting(common: &CommonArgs) -> WaitOptions {
    WaitOptions {
        timeout: common.peer_timeout(),
        ..WaitOptions::default()
    }
}

fn stale_hint(e: Error, peer: &str) -> Error {
    Error::config(format!(
        "{e} (is {peer} running? if an earlier run was killed, its registry entries may be stale: restart memcached)"
    ))
}

/// Connects an RC/UC QP to the peer named `peer` through the registry: publish `me` (the QP and
/// the buffer it exposes), wait for `peer`, connect, mark ready, and wait until the peer marks
/// ready from the same run as the entry we connected to (so a dead earlier run's entry is
/// detected, not used).
pub fn connect_through(
    reg: &Registry,
    qp: &QueuePair,
    exposed: Option<&MemoryRegion>,
    me: &str,
    peer: &str,
    common: &CommonArgs,
) -> Result<Entry> {
    reg.publish(me, &qp.info(exposed))?;
    let remote = reg
        .wait_for(peer, waiting(common))
        .map_err(|e| stale_hint(e, peer))?;
    qp.connect(&remote.info)?;
    reg.publish_ready(me)?;
    reg.wait_ready(peer, waiting(common), Some(remote.run_id))
        .map_err(|e| stale_hint(e, peer))?;
    Ok(remote)
}

/// Looks up a UD peer (published with its ready marker).
pub fn find_ud_peer(reg: &Registry, peer: &str, common: &CommonArgs) -> Result<Entry> {
    let remote = reg
        .wait_for(peer, waiting(common))
        .map_err(|e| stale_hint(e, peer))?;
    reg.wait_ready(peer, waiting(common), Some(remote.run_id))
        .map_err(|e| stale_hint(e, peer))?;
    Ok(remote)
}

/// Marks this side finished, so passive peers can leave.
pub fn publish_done(reg: &Registry, me: &str) -> Result<()> {
    reg.publish_ready(&format!("{me}-done"))
}

/// The passive side's loop: idle until stopped or until the active peer says it is done.
pub fn idle_until_peer_done(reg: &Registry, peer: &str, run: u64) -> Result<()> {
    let done = format!("{peer}-done");
    while !stop_requested() {
        if reg.is_ready(&done, Some(run))? {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// The throughput loop every selectively-signaled sender runs: post the batch until stopped,
/// publishing the running count for the reporter, then reap the signaled completions still out.
/// Stops at `op_limit` operations (rounded up to whole batches).
pub fn selective_loop<B: Postlist>(
    ep: &Endpoint,
    batch: &mut B,
    mut counter: UnsignaledCounter,
    op_limit: u64,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let timeout = PollTimeout::default();
    let per_post = batch.len() as u64;
    let mut ops = 0u64;
    counters.start(t);
    while !stop_requested() && ops < op_limit {
        batch.post_selective(&mut counter, timeout)?;
        ops += per_post;
        counters.set(t, ops);
    }
    counters.stop(t);
    counter.drain(ep.qp.send_cq(), timeout)
}
