//! The objects a benchmark makes on a port, in the order the verbs want them: a protection
//! domain, then completion queues, queue pairs and registered regions in it. One builder for
//! every benchmark and perftest tool, so that a QP's CQ sizing and the region's registration are
//! written once.

use std::sync::Arc;

use super::{
    Access, CompletionQueue, MemoryRegion, Port, ProtectionDomain, QpCaps, QpType, QueuePair,
    SharedReceiveQueue,
};
use crate::error::Result;
use crate::mem::{DmaBuffer, HugeBuffer, Placement};

/// A port and a protection domain on it; what is made here belongs to that PD.
#[derive(Clone)]
pub struct Resources {
    port: Port,
    pd: Arc<ProtectionDomain>,
}

/// How a QP is made: its transport and queue sizes, and whether it takes the `ibv_wr_*` API.
#[derive(Debug, Clone, Copy)]
pub struct QpSpec {
    /// RC, UC or UD.
    pub qp_type: QpType,
    /// Queue sizes and the inline limit asked for.
    pub caps: QpCaps,
    /// Make it with `ibv_create_qp_ex`, enabling the `ibv_wr_*` post path.
    pub ex: bool,
}

impl QpSpec {
    /// A QP of `qp_type` with `caps`, for `ibv_post_send`.
    pub fn new(qp_type: QpType, caps: QpCaps) -> QpSpec {
        QpSpec {
            qp_type,
            caps,
            ex: false,
        }
    }
}

impl Resources {
    /// A new PD on `port`.
    pub fn new(port: &Port) -> Result<Resources> {
        Ok(Resources {
            port: port.clone(),
            pd: ProtectionDomain::new(port.context())?,
        })
    }

    /// The port.
    pub fn port(&self) -> &Port {
        &self.port
    }

    /// The protection domain.
    pub fn pd(&self) -> &Arc<ProtectionDomain> {
        &self.pd
    }

    /// A completion queue of `depth` entries on the port's device.
    pub fn cq(&self, depth: u32) -> Result<Arc<CompletionQueue>> {
        CompletionQueue::new(self.port.context(), depth)
    }

    /// A completion queue of `depth` entries that reports on completion vector `vector` (for a
    /// loop that sleeps on completion events).
    pub fn cq_with_events(&self, depth: u32, vector: u32) -> Result<Arc<CompletionQueue>> {
        CompletionQueue::with_events(self.port.context(), depth, vector)
    }

    /// A QP whose sends and receives complete on `send_cq` and `recv_cq`.
    pub fn qp_on(
        &self,
        spec: QpSpec,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
    ) -> Result<QueuePair> {
        let (pd, port) = (&self.pd, &self.port);
        if spec.ex {
            QueuePair::new_ex(pd, port, send_cq, recv_cq, spec.qp_type, spec.caps)
        } else {
            QueuePair::new(pd, port, send_cq, recv_cq, spec.qp_type, spec.caps)
        }
    }

    /// A shared receive queue of `max_wr` RECVs in this PD.
    pub fn srq(&self, max_wr: u32) -> Result<Arc<SharedReceiveQueue>> {
        SharedReceiveQueue::new(&self.pd, max_wr)
    }

    /// A QP on the given CQs (classic post API) whose RECVs come from `srq`.
    pub fn qp_on_srq(
        &self,
        spec: QpSpec,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
        srq: &Arc<SharedReceiveQueue>,
    ) -> Result<QueuePair> {
        QueuePair::with_srq(
            &self.pd,
            &self.port,
            send_cq,
            recv_cq,
            spec.qp_type,
            spec.caps,
            srq,
        )
    }

    /// A QP with a CQ of its own for its sends and receives, deep enough for both queues.
    pub fn qp(&self, spec: QpSpec) -> Result<QueuePair> {
        let cq = self.cq(spec.caps.max_send_wr + spec.caps.max_recv_wr)?;
        self.qp_on(spec, &cq, &cq)
    }

    /// Registers `memory` with `access`.
    pub fn register(&self, memory: impl DmaBuffer, access: Access) -> Result<Arc<MemoryRegion>> {
        MemoryRegion::register(&self.pd, memory, access)
    }

    /// A hugepage-backed buffer of `size` bytes placed as `place` says, registered with
    /// `access`.
    pub fn region(
        &self,
        size: usize,
        place: Placement,
        access: Access,
    ) -> Result<Arc<MemoryRegion>> {
        self.register(HugeBuffer::new(size, place)?, access)
    }
}
