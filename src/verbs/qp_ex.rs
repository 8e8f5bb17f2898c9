//! The extended (`ibv_wr_*`) post API of a QP made with [`QueuePair::new_ex`].

use std::ptr::NonNull;

use super::{defaults, AddressHandle, QueuePair};
use crate::error::{Error, Result};
use crate::sys;

/// The `ibv_wr_start … ibv_wr_complete` post API of one QP: builds WQEs directly in the send queue
/// without an intermediate `ibv_send_wr`.
///
/// Usage: [`start`](Self::start), then per WR: [`set_wr`](Self::set_wr), one operation, one data
/// setter (and [`set_ud_addr`](Self::set_ud_addr) on UD); finally [`complete`](Self::complete).
#[derive(Debug, Clone, Copy)]
pub struct QueuePairEx<'a> {
    ex: NonNull<sys::ibv_qp_ex>,
    _qp: &'a QueuePair,
}

impl<'a> QueuePairEx<'a> {
    pub(crate) fn new(ex: NonNull<sys::ibv_qp_ex>, qp: &'a QueuePair) -> Self {
        QueuePairEx { ex, _qp: qp }
    }

    /// Opens a batch of WRs.
    #[inline(always)]
    pub fn start(&self) {
        // SAFETY: `ex` belongs to a live QP.
        unsafe { sys::shim_wr_start(self.ex.as_ptr()) }
    }
    /// Rings the doorbell for the batch; on error nothing of it was posted.
    #[inline(always)]
    pub fn complete(&self) -> Result<()> {
        // SAFETY: `ex` belongs to a live QP with an open batch.
        let rc = unsafe { sys::shim_wr_complete(self.ex.as_ptr()) };
        if rc != 0 {
            return Err(Error::verb("ibv_wr_complete", rc));
        }
        Ok(())
    }
    /// Drops the open batch.
    pub fn abort(&self) {
        // SAFETY: `ex` belongs to a live QP.
        unsafe { sys::shim_wr_abort(self.ex.as_ptr()) }
    }
    /// Sets the next WR's `wr_id`, whether it is signaled, and whether its data is inline (set
    /// `inline` when the data setter is [`set_inline_data`](Self::set_inline_data): some providers,
    /// rxe among them, read the flag rather than infer it).
    #[inline(always)]
    pub fn set_wr(&self, wr_id: u64, signaled: bool, inline: bool) {
        let mut flags = if signaled {
            sys::ibv_send_flags::IBV_SEND_SIGNALED.0
        } else {
            0
        };
        if inline {
            flags |= sys::ibv_send_flags::IBV_SEND_INLINE.0;
        }
        // SAFETY: plain field writes into the live qp_ex, as ibv_wr_* documents.
        unsafe {
            (*self.ex.as_ptr()).wr_id = wr_id;
            (*self.ex.as_ptr()).wr_flags = flags;
        }
    }
    /// RDMA WRITE to `remote_addr` under `rkey`.
    #[inline(always)]
    pub fn rdma_write(&self, rkey: u32, remote_addr: u64) {
        // SAFETY: `ex` belongs to a live QP with an open batch; the addresses are only recorded.
        unsafe { sys::shim_wr_rdma_write(self.ex.as_ptr(), rkey, remote_addr) }
    }
    /// RDMA WRITE with immediate (`imm` in host order).
    pub fn rdma_write_imm(&self, rkey: u32, remote_addr: u64, imm: u32) {
        // SAFETY: as for rdma_write.
        unsafe { sys::shim_wr_rdma_write_imm(self.ex.as_ptr(), rkey, remote_addr, imm.to_be()) }
    }
    /// RDMA READ from `remote_addr` under `rkey`.
    #[inline(always)]
    pub fn rdma_read(&self, rkey: u32, remote_addr: u64) {
        // SAFETY: as for rdma_write.
        unsafe { sys::shim_wr_rdma_read(self.ex.as_ptr(), rkey, remote_addr) }
    }
    /// SEND.
    pub fn send(&self) {
        // SAFETY: `ex` belongs to a live QP with an open batch.
        unsafe { sys::shim_wr_send(self.ex.as_ptr()) }
    }
    /// SEND with immediate (`imm` in host order).
    pub fn send_imm(&self, imm: u32) {
        // SAFETY: `ex` belongs to a live QP with an open batch.
        unsafe { sys::shim_wr_send_imm(self.ex.as_ptr(), imm.to_be()) }
    }
    /// 8-byte FETCH_AND_ADD at `remote_addr`; the old value lands in the SGE.
    pub fn atomic_fetch_add(&self, rkey: u32, remote_addr: u64, add: u64) {
        // SAFETY: as for rdma_write.
        unsafe { sys::shim_wr_atomic_fetch_add(self.ex.as_ptr(), rkey, remote_addr, add) }
    }
    /// 8-byte CMP_AND_SWP at `remote_addr`; the old value lands in the SGE.
    pub fn atomic_cmp_swp(&self, rkey: u32, remote_addr: u64, compare: u64, swap: u64) {
        // SAFETY: as for rdma_write.
        unsafe { sys::shim_wr_atomic_cmp_swp(self.ex.as_ptr(), rkey, remote_addr, compare, swap) }
    }
    /// Data from a registered buffer.
    ///
    /// # Safety
    /// `addr..addr+len` must lie in a region registered under `lkey` that stays valid until the
    /// WR completes.
    #[inline(always)]
    pub unsafe fn set_sge(&self, lkey: u32, addr: u64, len: u32) {
        // SAFETY: the caller vouches for the memory; `ex` belongs to a live QP.
        unsafe { sys::shim_wr_set_sge(self.ex.as_ptr(), lkey, addr, len) }
    }
    /// Data copied into the WQE now (inline).
    #[inline(always)]
    pub fn set_inline_data(&self, data: &[u8]) {
        // SAFETY: the provider copies `data` before returning; `ex` belongs to a live QP.
        unsafe {
            sys::shim_wr_set_inline_data(self.ex.as_ptr(), data.as_ptr() as *mut _, data.len())
        }
    }
    /// Destination of a UD SEND.
    pub fn set_ud_addr(&self, ah: &AddressHandle, remote_qpn: u32) {
        // SAFETY: the AH is alive; `ex` belongs to a live QP.
        unsafe {
            sys::shim_wr_set_ud_addr(self.ex.as_ptr(), ah.as_raw(), remote_qpn, defaults::QKEY)
        }
    }
}
