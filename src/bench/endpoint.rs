//! A worker thread's verbs objects, and how it meets its peer through the registry.

use std::sync::Arc;
use std::time::Duration;

use crate::control::stop_requested;
use crate::error::Result;
use crate::hot::{pump, PollTimeout, Postlist, UnsignaledCounter};
use crate::mem::{HugeBuffer, Placement};
use crate::registry::{Entry, Registry, WaitOptions};
use crate::stats::Counters;
use crate::verbs::{
    Access, AddressHandle, CompletionQueue, MemoryRegion, Port, ProtectionDomain, QpCaps, QpInfo,
    QpType, QueuePair,
};

/// One QP with its CQ and a registered buffer. The region owns the memory and the QP keeps the
/// region alive while WRs may reference it, so these drop safely in any order; the fields are
/// private all the same, so that nothing swaps them under a running loop.
///
/// Reading the region compiles:
/// ```
/// # use rdma_bench::bench::endpoint::Endpoint;
/// fn first_byte(ep: &Endpoint) -> u8 {
///     ep.mr().to_vec(0, 1)[0]
/// }
/// ```
/// Swapping it out from under the QP does not:
/// ```compile_fail,E0616
/// # use std::sync::Arc;
/// # use rdma_bench::bench::endpoint::Endpoint;
/// # use rdma_bench::verbs::MemoryRegion;
/// fn swap(ep: &mut Endpoint, other: Arc<MemoryRegion>) -> Arc<MemoryRegion> {
///     std::mem::replace(&mut ep.mr, other)
/// }
/// ```
pub struct Endpoint {
    qp: QueuePair,
    mr: Arc<MemoryRegion>,
    pd: Arc<ProtectionDomain>,
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
    /// Makes PD, CQ, QP, buffer (placed as `place` says) and MR on `port`.
    pub fn new(port: &Port, spec: EndpointSpec, place: Placement) -> Result<Endpoint> {
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
        let mr = MemoryRegion::register(&pd, HugeBuffer::new(spec.buf_size, place)?, access)?;
        mr.fill(spec.fill);
        Ok(Endpoint { qp, mr, pd })
    }

    /// The queue pair.
    pub fn qp(&self) -> &QueuePair {
        &self.qp
    }
    /// The queue pair, for posting.
    pub fn qp_mut(&mut self) -> &mut QueuePair {
        &mut self.qp
    }
    /// The registered buffer.
    pub fn mr(&self) -> &Arc<MemoryRegion> {
        &self.mr
    }
    /// The QP (to post on) and the region (to build batches over) at once.
    pub fn parts(&mut self) -> (&mut QueuePair, &Arc<MemoryRegion>) {
        (&mut self.qp, &self.mr)
    }

    /// What a peer needs to reach this endpoint and its buffer.
    pub fn info(&self) -> QpInfo {
        self.qp.info(Some(&self.mr))
    }

    /// An AH towards a UD peer.
    pub fn ah_to(&self, peer: &QpInfo) -> Result<Arc<AddressHandle>> {
        AddressHandle::new(&self.pd, self.qp.port(), peer)
    }

    /// Meets the connected peer `peer` as `me` (see [`Registry::rendezvous`]), exposing this
    /// endpoint's buffer.
    pub fn rendezvous(
        &mut self,
        reg: &Registry,
        me: &str,
        peer: &str,
        wait: WaitOptions,
    ) -> Result<Entry> {
        let info = self.info();
        let qp = &mut self.qp;
        reg.rendezvous(me, peer, &info, wait, |remote| qp.connect(remote))
    }
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

/// The throughput loop every selectively-signaled sender runs ([`pump`]): posts until stopped
/// or `op_limit` operations (rounded up to whole postlists), publishing the running count for the
/// reporter once per stretch, then reaps the signaled completions still out.
pub fn selective_loop<B: Postlist>(
    qp: &mut QueuePair,
    batch: &mut B,
    mut counter: UnsignaledCounter,
    op_limit: u64,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let timeout = PollTimeout::default();
    counters.start(t);
    let ops = pump(qp, batch, &mut counter, op_limit, timeout, |ops| {
        counters.set(t, ops);
        !stop_requested()
    });
    if let Ok(ops) = ops {
        counters.set(t, ops);
    }
    counters.stop(t);
    ops?;
    counter.drain(qp.send_cq(), timeout)
}
