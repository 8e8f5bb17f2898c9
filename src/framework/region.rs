//! A server that exposes one memory region to many connected clients over several ports (the
//! atomics-sequencer server's counters, the ws-* master's request region): one SysV segment
//! with the original's key, created on the first port and attached again for every other
//! port's PD, and one small QP per client connected over it.

use std::sync::Arc;

use super::endpoint::connect_qp;
use super::lifecycle::ThreadCtx;
use crate::error::Result;
use crate::mem::ShmBuffer;
use crate::registry::{Entry, Registry, WaitOptions};
use crate::verbs::{
    Access, CompletionQueue, MemoryRegion, Port, QpCaps, QpSpec, QpType, QueuePair, Resources,
};

/// One port's view of the region.
pub struct RegionPort {
    res: Resources,
    cq: Arc<CompletionQueue>,
    /// The region as registered on this port's PD.
    pub mr: Arc<MemoryRegion>,
}

/// Segment `shm_key` of `size` bytes, zeroed, registered with `access` on ports
/// `port-index .. +ports`; each port's CQ has room for `qps` QPs' connection checks.
/// `check_port` vets each port first (e.g. atomics support).
pub fn open(
    ctx: &ThreadCtx<'_>,
    ports: usize,
    shm_key: i32,
    size: usize,
    access: Access,
    qps: usize,
    check_port: impl Fn(&Port) -> Result<()>,
) -> Result<Vec<RegionPort>> {
    let common = ctx.common;
    let mut out = Vec::with_capacity(ports);
    for p in 0..ports {
        let port = ctx.open_port(common.port_index + p)?;
        check_port(&port)?;
        let res = Resources::new(&port)?;
        let buf = if p == 0 {
            ShmBuffer::create(shm_key, size, common.placement())?
        } else {
            ShmBuffer::attach(shm_key, size)?
        };
        let mr = res.register(buf, access)?;
        if p == 0 {
            mr.fill(0);
        }
        let cq = res.cq((2 * qps as u32).max(16))?;
        out.push(RegionPort { res, cq, mr });
    }
    Ok(out)
}

impl RegionPort {
    /// A QP of `qp_type` that exposes the region, met as `me` by the client `peer` (with the
    /// connection check); it only ever answers, so its queues are minimal.
    pub fn accept(
        &self,
        qp_type: QpType,
        reg: &Registry,
        me: &str,
        peer: &str,
        wait: WaitOptions,
    ) -> Result<(QueuePair, Entry)> {
        let caps = QpCaps {
            max_send_wr: 2,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let mut qp = self
            .res
            .qp_on(QpSpec::new(qp_type, caps), &self.cq, &self.cq)?;
        let info = qp.info(Some(&self.mr));
        let remote = connect_qp(&mut qp, &self.mr, &info, reg, me, peer, wait)?;
        Ok((qp, remote))
    }
}
