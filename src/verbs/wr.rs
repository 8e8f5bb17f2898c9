//! The extended post API (`ibv_wr_start … ibv_wr_complete`) of a QP made with
//! [`QueuePair::new_ex`], as a guard: [`QueuePair::wr_start`] borrows the QP exclusively and opens
//! the batch; WRs are added only through the guard; [`WrGuard::complete`] consumes it and rings the
//! doorbell; dropping it aborts the batch. The guard stays on the thread that opened it (some
//! providers hold the send queue's lock from start to complete). A guard leaked with
//! `mem::forget` leaves its batch open: send batches on the QP are refused until the next
//! `wr_start` aborts it, and dropping the QP aborts it too.
//!
//! What compiles:
//! ```
//! # use std::sync::Arc;
//! # use rdma_bench::verbs::{MemoryRegion, Op, Payload, QueuePair, Wr};
//! fn post(qp: &mut QueuePair, mr: &Arc<MemoryRegion>, rkey: u32, raddr: u64) -> rdma_bench::Result<()> {
//!     let wr = Wr {
//!         wr_id: 1, signaled: true, op: Op::Write, remote: Some((rkey, raddr)), ud: None,
//!         payload: Payload::Region { mr, offset: 0, len: 64 },
//!     };
//!     let mut g = qp.wr_start()?;
//!     g.push(wr)?;
//!     g.complete()
//! }
//! ```
//! What does not:
//!
//! A WR set outside a batch (there is no setter on the QP, only on the guard):
//! ```compile_fail,E0599
//! # use rdma_bench::verbs::{Op, Payload, QueuePair, Wr};
//! fn post(qp: &mut QueuePair, wr: Wr<'_>) -> rdma_bench::Result<()> {
//!     qp.push(wr)
//! }
//! ```
//! A WR added after the batch was completed (`complete` consumes the guard):
//! ```compile_fail,E0382
//! # use rdma_bench::verbs::{Op, Payload, QueuePair, Wr};
//! fn post(qp: &mut QueuePair, wr: Wr<'_>) -> rdma_bench::Result<()> {
//!     let mut g = qp.wr_start()?;
//!     g.complete()?;
//!     g.push(wr)
//! }
//! ```
//! Two live batch guards on one QP:
//! ```compile_fail,E0499
//! # use rdma_bench::verbs::QueuePair;
//! fn post(qp: &mut QueuePair) -> rdma_bench::Result<()> {
//!     let first = qp.wr_start()?;
//!     let second = qp.wr_start()?;
//!     first.complete()?;
//!     second.complete()
//! }
//! ```
//! Sending an open batch to another thread:
//! ```compile_fail,E0277
//! # use rdma_bench::verbs::QueuePair;
//! fn post(qp: &mut QueuePair) -> rdma_bench::Result<()> {
//!     let g = qp.wr_start()?;
//!     std::thread::scope(|s| s.spawn(move || g.complete()).join().unwrap())
//! }
//! ```

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use super::{defaults, AddressHandle, MemoryRegion, Op, QpType, QueuePair};
use crate::error::{Error, Result};
use crate::sys;

/// Where a WR's payload comes from (or, for READs and atomics, where the result lands).
#[derive(Debug, Clone, Copy)]
pub enum Payload<'d> {
    /// Copied into the WQE before the call returns (`IBV_SEND_INLINE`).
    Inline(&'d [u8]),
    /// `len` bytes at `offset` of a registered region. The QP keeps the region alive until it is
    /// destroyed, so the WR may complete whenever it likes.
    Region {
        /// The region.
        mr: &'d Arc<MemoryRegion>,
        /// Byte offset in it.
        offset: usize,
        /// Bytes.
        len: u32,
    },
}

/// One send WR for [`WrGuard::push`].
#[derive(Debug, Clone, Copy)]
pub struct Wr<'d> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Generate a completion for this WR.
    pub signaled: bool,
    /// The operation.
    pub op: Op,
    /// `(rkey, address)` of the peer's memory, for WRITEs, READs and atomics.
    pub remote: Option<(u32, u64)>,
    /// Destination of a UD SEND: the AH (kept alive by the QP) and the remote QP number.
    pub ud: Option<(&'d Arc<AddressHandle>, u32)>,
    /// The data.
    pub payload: Payload<'d>,
}

/// An open `ibv_wr_start … ibv_wr_complete` batch on one QP. Not `Send`, and only one per QP at a
/// time (it holds the QP's `&mut`).
#[must_use = "WRs are posted only by complete(); dropping the guard aborts the batch"]
pub struct WrGuard<'q> {
    qp: &'q mut QueuePair,
    ex: NonNull<sys::ibv_qp_ex>,
    /// The provider may hold the SQ lock from start to complete: stay on this thread.
    _not_send: PhantomData<*mut ()>,
}

impl QueuePair {
    /// Opens an `ibv_wr_*` batch (QPs made with [`QueuePair::new_ex`] only).
    #[inline(always)]
    pub fn wr_start(&mut self) -> Result<WrGuard<'_>> {
        let Some(ex) = NonNull::new(self.ex) else {
            return Err(not_ex());
        };
        if self.send_key == 0 {
            // SAFETY: a leaked guard left a batch open on this live qp_ex; abort it first.
            unsafe { sys::shim_wr_abort(ex.as_ptr()) };
        }
        self.send_key = 0;
        // SAFETY: `ex` belongs to this live QP, borrowed exclusively by the guard until it is
        // completed or aborted.
        unsafe { sys::shim_wr_start(ex.as_ptr()) };
        Ok(WrGuard {
            qp: self,
            ex,
            _not_send: PhantomData,
        })
    }
}

#[cold]
#[inline(never)]
fn not_ex() -> Error {
    Error::config("the ibv_wr_* path needs a QP made with QueuePair::new_ex")
}

impl WrGuard<'_> {
    /// Adds one WR, after checking that this QP's transport carries it and that the payload suits
    /// the operation; a region payload is kept alive by the QP.
    pub fn push(&mut self, wr: Wr<'_>) -> Result<()> {
        let t = self.qp.qp_type();
        wr.op.check_transport(t)?;
        if wr.op.is_remote() != wr.remote.is_some() {
            return Err(Error::config(if wr.op.is_remote() {
                "this operation needs a remote (rkey, address)"
            } else {
                "SENDs take no remote address"
            }));
        }
        if (t == QpType::Ud) != wr.ud.is_some() {
            return Err(Error::config(
                "UD SENDs need a destination (AH, QPN); RC/UC WRs must not have one",
            ));
        }
        let data = match wr.payload {
            Payload::Inline(bytes) => {
                if wr.op.reads_into_local() {
                    return Err(Error::config("READs and atomics cannot be inline"));
                }
                if bytes.len() > self.qp.caps().max_inline_data as usize {
                    return Err(Error::config(format!(
                        "{} inline bytes exceed the QP's inline limit of {}",
                        bytes.len(),
                        self.qp.caps().max_inline_data
                    )));
                }
                Data::Inline {
                    addr: bytes.as_ptr(),
                    len: bytes.len(),
                }
            }
            Payload::Region { mr, offset, len } => {
                if !mr.contains(offset, len as usize) {
                    return Err(Error::config(format!(
                        "bytes {offset}..+{len} are outside the {}-byte region",
                        mr.len()
                    )));
                }
                if wr.op.is_atomic() && len != 8 {
                    return Err(Error::config(format!(
                        "atomics move exactly 8 bytes, not {len}"
                    )));
                }
                self.qp.keep_alive_mr(mr)?;
                Data::Sge {
                    lkey: mr.lkey(),
                    addr: mr.addr() as u64 + offset as u64,
                    len,
                }
            }
        };
        if let Some((ah, _)) = wr.ud {
            self.qp.keep_alive_ah(ah)?;
        }
        let (rkey, raddr) = wr.remote.unwrap_or((0, 0));
        let ud = wr.ud.map(|(ah, qpn)| (ah.as_raw(), qpn));
        // SAFETY: checked above: the op is one this QP was created for, the SGE lies in a region
        // this QP keeps alive, the AH is kept alive likewise.
        unsafe { self.push_unchecked(wr.wr_id, wr.signaled, wr.op, rkey, raddr, ud, data) };
        Ok(())
    }

    /// Adds one WR without checks (the prebuilt batches check once, when they are built).
    ///
    /// # Safety
    /// `op` is carried by this QP's transport; a `Data::Sge` lies in a region kept alive by this
    /// QP ([`QueuePair::keep_alive_mr`]); a `Data::Inline` range is readable for the call; `ud` is `Some` exactly on UD QPs, with an AH kept alive
    /// by this QP; remote ops get their real `rkey`/`raddr`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn push_unchecked(
        &mut self,
        wr_id: u64,
        signaled: bool,
        op: Op,
        rkey: u32,
        raddr: u64,
        ud: Option<(*mut sys::ibv_ah, u32)>,
        data: Data,
    ) {
        let ex = self.ex.as_ptr();
        let mut flags = if signaled {
            sys::ibv_send_flags::IBV_SEND_SIGNALED.0
        } else {
            0
        };
        if matches!(data, Data::Inline { .. }) {
            // Some providers (rxe) read the flag when the operation is built, not the data setter.
            flags |= sys::ibv_send_flags::IBV_SEND_INLINE.0;
        }
        // SAFETY: the batch is open on this live QP (the guard exists) and only this guard writes
        // the qp_ex's fields; the op builder exists for this transport (caller); SGE memory and AH
        // outlive the WR (caller); inline data is copied before the setter returns.
        unsafe {
            (*ex).wr_id = wr_id;
            (*ex).wr_flags = flags;
            match op {
                Op::Write => sys::shim_wr_rdma_write(ex, rkey, raddr),
                Op::WriteImm(imm) => sys::shim_wr_rdma_write_imm(ex, rkey, raddr, imm.to_be()),
                Op::Read => sys::shim_wr_rdma_read(ex, rkey, raddr),
                Op::Send => sys::shim_wr_send(ex),
                Op::SendImm(imm) => sys::shim_wr_send_imm(ex, imm.to_be()),
                Op::FetchAdd(add) => sys::shim_wr_atomic_fetch_add(ex, rkey, raddr, add),
                Op::CmpSwap(cmp, swp) => sys::shim_wr_atomic_cmp_swp(ex, rkey, raddr, cmp, swp),
            }
            if let Some((ah, qpn)) = ud {
                sys::shim_wr_set_ud_addr(ex, ah, qpn, defaults::QKEY);
            }
            match data {
                Data::Inline { addr, len } => sys::shim_wr_set_inline_data(ex, addr as *mut _, len),
                Data::Sge { lkey, addr, len } => sys::shim_wr_set_sge(ex, lkey, addr, len),
            }
        }
    }

    /// Sets the send flags the next [`push_rdma`](Self::push_rdma) calls use: signaled or not,
    /// and inline when `INLINE`. They stay until set again, so a run of unsignaled WRs pays for
    /// them once.
    #[inline(always)]
    pub(crate) fn set_rdma_flags<const INLINE: bool>(&mut self, signaled: bool) {
        let inline = if INLINE {
            sys::ibv_send_flags::IBV_SEND_INLINE.0
        } else {
            0
        };
        let signal = if signaled {
            sys::ibv_send_flags::IBV_SEND_SIGNALED.0
        } else {
            0
        };
        // SAFETY: the batch is open on this live QP and only this guard writes the qp_ex.
        unsafe { (*self.ex.as_ptr()).wr_flags = inline | signal };
    }

    /// Adds one READ (`READ`) or WRITE with its data inline (`INLINE`) or from an SGE, with the
    /// flags of the last [`set_rdma_flags`](Self::set_rdma_flags): the prebuilt batches' per-WR
    /// step, with the operation and the data kind fixed at compile time so that it branches on
    /// nothing.
    ///
    /// # Safety
    /// This QP is RC or UC (UC: `READ` is false); `set_rdma_flags::<INLINE>` ran in this batch;
    /// `local..local+len` lies in a region this QP keeps alive ([`QueuePair::keep_alive_mr`])
    /// and registered under `lkey`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn push_rdma<const READ: bool, const INLINE: bool>(
        &mut self,
        wr_id: u64,
        rkey: u32,
        raddr: u64,
        lkey: u32,
        local: u64,
        len: u32,
    ) {
        let ex = self.ex.as_ptr();
        // SAFETY: as in push_unchecked: the batch is open and only this guard writes the qp_ex;
        // RC/UC QPs have READ (RC) and WRITE builders (caller); the flags are set (caller); the
        // data lies in a region this QP keeps alive (caller), and inline bytes are copied before
        // the setter returns.
        unsafe {
            (*ex).wr_id = wr_id;
            if READ {
                sys::shim_wr_rdma_read(ex, rkey, raddr);
            } else {
                sys::shim_wr_rdma_write(ex, rkey, raddr);
            }
            if INLINE {
                sys::shim_wr_set_inline_data(ex, local as *mut _, len as usize);
            } else {
                sys::shim_wr_set_sge(ex, lkey, local, len);
            }
        }
    }

    /// Rings the doorbell for every WR added; on error none of them was posted.
    #[inline(always)]
    pub fn complete(self) -> Result<()> {
        let ex = self.ex.as_ptr();
        self.qp.send_key = self.qp.serial();
        std::mem::forget(self);
        // SAFETY: the batch is open on this live QP; forgetting the guard keeps Drop from aborting
        // the batch this call closes.
        let rc = unsafe { sys::shim_wr_complete(ex) };
        if rc != 0 {
            return Err(Error::verb("ibv_wr_complete", rc));
        }
        Ok(())
    }

    /// Drops every WR added (the same as dropping the guard).
    pub fn abort(self) {}
}

impl Drop for WrGuard<'_> {
    fn drop(&mut self) {
        self.qp.send_key = self.qp.serial();
        // SAFETY: the batch is open on this live QP (complete() forgets the guard instead).
        unsafe { sys::shim_wr_abort(self.ex.as_ptr()) }
    }
}

/// A WR's data, checked: inline bytes (copied by the provider during the call) or an SGE.
#[derive(Debug, Clone, Copy)]
enum Data {
    Inline { addr: *const u8, len: usize },
    Sge { lkey: u32, addr: u64, len: u32 },
}
