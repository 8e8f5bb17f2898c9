//! Pre-built receive work requests, reposted in batches with one `ibv_post_recv`.

use std::sync::Arc;

use super::raw::RawArray;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{MemoryRegion, QueuePair};

/// `n` linked receive WRs for one QP; slot `i` receives into `offset + i·stride` of the region,
/// `len` bytes. The QP keeps the region alive while RECVs are posted.
pub struct RecvBatch {
    wrs: RawArray<sys::ibv_recv_wr>,
    _sges: RawArray<sys::ibv_sge>,
    qp_serial: u64,
}

impl RecvBatch {
    /// Builds `n` receives of `len` bytes each (UD: include the 40-byte GRH in `len`).
    pub fn new(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        n: usize,
        len: u32,
        offset: usize,
        stride: usize,
    ) -> Result<Self> {
        if n == 0 {
            return Err(Error::config("a receive batch needs at least one WR"));
        }
        // Checked: a wrapped end would pass the bounds test.
        let end = (n - 1)
            .checked_mul(stride)
            .and_then(|e| e.checked_add(offset))
            .and_then(|e| e.checked_add(len as usize));
        match end {
            Some(end) if end <= mr.len() => {}
            _ => {
                return Err(Error::config(format!(
                    "receive batch of {n} × {len} bytes (stride {stride}, offset {offset}) does not fit the {}-byte MR",
                    mr.len()
                )))
            }
        }
        qp.keep_alive_mr(mr)?;
        let sges = RawArray::new(
            (0..n)
                .map(|i| sys::ibv_sge {
                    addr: mr.addr() as u64 + (offset + i * stride) as u64,
                    length: len,
                    lkey: mr.lkey(),
                })
                .collect(),
        );
        let wrs = RawArray::new(
            (0..n)
                .map(|i| sys::ibv_recv_wr {
                    wr_id: i as u64,
                    next: std::ptr::null_mut(),
                    sg_list: sges.at(i),
                    num_sge: 1,
                })
                .collect(),
        );
        for i in 0..n - 1 {
            // SAFETY: both entries are in bounds; no reference to the array exists.
            unsafe { (*wrs.at(i)).next = wrs.at(i + 1) };
        }
        Ok(RecvBatch {
            wrs,
            _sges: sges,
            qp_serial: qp.serial(),
        })
    }

    /// Number of WRs.
    pub fn len(&self) -> usize {
        self.wrs.len()
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.wrs.len() == 0
    }

    /// Posts the first `n` WRs (all when `n` ≥ len) with one `ibv_post_recv`, on the QP the
    /// batch was built for.
    #[inline(always)]
    pub fn post(&mut self, qp: &mut QueuePair, n: usize) -> Result<()> {
        if qp.serial() != self.qp_serial {
            return Err(Error::config("this batch was built for another QP"));
        }
        let n = n.min(self.wrs.len());
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `n - 1` is in bounds; the chain is cut after it for this call and restored
        // after; every SGE lies in the region this (the batch's) QP keeps alive.
        unsafe {
            let last = self.wrs.at_unchecked(n - 1);
            let saved = std::mem::replace(&mut (*last).next, std::ptr::null_mut());
            let r = qp.post_recv_chain(self.wrs.head());
            (*last).next = saved;
            r
        }
    }
}
