//! Pre-built receive work requests, reposted in batches with one `ibv_post_recv`.

use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{MemoryRegion, QueuePair};

/// `n` linked receive WRs; slot `i` receives into `offset + i·stride` of the MR, `len` bytes.
pub struct RecvBatch<'a> {
    wrs: Box<[sys::ibv_recv_wr]>,
    _sges: Box<[sys::ibv_sge]>,
    qp: &'a QueuePair,
    _mr: PhantomData<&'a MemoryRegion>,
}

impl<'a> RecvBatch<'a> {
    /// Builds `n` receives of `len` bytes each (UD: include the 40-byte GRH in `len`).
    pub fn new(
        qp: &'a QueuePair,
        mr: &'a MemoryRegion,
        n: usize,
        len: u32,
        offset: usize,
        stride: usize,
    ) -> Result<Self> {
        if n == 0 {
            return Err(Error::config("a receive batch needs at least one WR"));
        }
        let end = offset + (n - 1) * stride + len as usize;
        if end > mr.len() {
            return Err(Error::config(format!(
                "receive batch needs {end} bytes but the MR has {}",
                mr.len()
            )));
        }
        let mut sges: Box<[sys::ibv_sge]> = (0..n)
            .map(|i| sys::ibv_sge {
                addr: mr.addr() as u64 + (offset + i * stride) as u64,
                length: len,
                lkey: mr.lkey(),
            })
            .collect();
        let mut wrs: Box<[sys::ibv_recv_wr]> = (0..n)
            .map(|i| sys::ibv_recv_wr {
                wr_id: i as u64,
                next: std::ptr::null_mut(),
                sg_list: &mut sges[i],
                num_sge: 1,
            })
            .collect();
        for i in 0..n - 1 {
            let next: *mut sys::ibv_recv_wr = &mut wrs[i + 1];
            wrs[i].next = next;
        }
        Ok(RecvBatch {
            wrs,
            _sges: sges,
            qp,
            _mr: PhantomData,
        })
    }

    /// Number of WRs.
    pub fn len(&self) -> usize {
        self.wrs.len()
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.wrs.is_empty()
    }

    /// Posts the first `n` WRs (all when `n` ≥ len) with one `ibv_post_recv`.
    #[inline(always)]
    pub fn post(&mut self, n: usize) -> Result<()> {
        let n = n.min(self.wrs.len());
        if n == 0 {
            return Ok(());
        }
        // Cut the chain after `n` for this call, restore it after.
        let saved = std::mem::replace(&mut self.wrs[n - 1].next, std::ptr::null_mut());
        let mut bad: *mut sys::ibv_recv_wr = std::ptr::null_mut();
        // SAFETY: WRs, SGEs, MR and QP are alive for 'a; the chain is NULL-terminated at n-1.
        let rc = unsafe { sys::shim_post_recv(self.qp.as_raw(), self.wrs.as_mut_ptr(), &mut bad) };
        self.wrs[n - 1].next = saved;
        if rc != 0 {
            return Err(Error::verb("ibv_post_recv", rc));
        }
        Ok(())
    }
}
