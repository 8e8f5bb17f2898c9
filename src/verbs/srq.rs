//! Shared receive queues: one pool of RECVs that every QP attached to it consumes from.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use super::{MemoryRegion, ProtectionDomain};
use crate::error::{Error, Result};
use crate::sys;

/// An `ibv_srq` (basic type). QPs made with it keep it alive; it keeps alive every region its
/// posted RECVs reference until it is destroyed, after those QPs.
///
/// `Send`, not `Sync`: posting is one thread's at a time, as for a QP (a provider run without
/// locks, such as mlx5 with `MLX5_SINGLE_THREADED`, relies on it). An `Arc` of it therefore
/// stays on the thread that made it.
pub struct SharedReceiveQueue {
    raw: NonNull<sys::ibv_srq>,
    max_wr: u32,
    pd: Arc<ProtectionDomain>,
    kept_mrs: std::cell::RefCell<Vec<Arc<MemoryRegion>>>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the handle may move between threads; `Cell` keeps it from being shared by two.
unsafe impl Send for SharedReceiveQueue {}

impl std::fmt::Debug for SharedReceiveQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReceiveQueue")
            .field("max_wr", &self.max_wr)
            .finish_non_exhaustive()
    }
}

impl SharedReceiveQueue {
    /// Creates an SRQ in `pd` for up to `max_wr` posted RECVs of one SGE each. A device that
    /// has no SRQs, or fewer entries, refuses with its errno and its limit named.
    // An Arc, not an Rc: a QP that keeps it alive may move to another thread and be dropped
    // there, so the count must be atomic; the queue itself is never reachable from that QP.
    #[allow(clippy::arc_with_non_send_sync)]
    pub fn new(pd: &Arc<ProtectionDomain>, max_wr: u32) -> Result<Arc<SharedReceiveQueue>> {
        let mut attr = sys::ibv_srq_init_attr {
            attr: sys::ibv_srq_attr {
                max_wr,
                max_sge: 1,
                srq_limit: 0,
            },
            ..Default::default()
        };
        // SAFETY: the PD is alive and `attr` is fully initialised.
        let raw = unsafe { sys::ibv_create_srq(pd.as_raw(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            let e = Error::last_os("ibv_create_srq");
            let ctx = pd.context();
            match ctx.max_srq_wr() {
                Ok(0) => Error::config(format!(
                    "device {} has no shared receive queues",
                    ctx.name()
                )),
                Ok(limit) if max_wr > limit => Error::config(format!(
                    "an SRQ of {max_wr} RECVs is above device {}'s max_srq_wr of {limit}",
                    ctx.name()
                )),
                _ => e,
            }
        })?;
        Ok(Arc::new(SharedReceiveQueue {
            raw,
            max_wr,
            pd: Arc::clone(pd),
            kept_mrs: std::cell::RefCell::new(Vec::new()),
            _not_sync: PhantomData,
        }))
    }

    /// How many RECVs it holds at most (as asked).
    pub fn max_wr(&self) -> u32 {
        self.max_wr
    }

    /// The PD it was made in.
    pub fn pd(&self) -> &Arc<ProtectionDomain> {
        &self.pd
    }

    /// The raw `ibv_srq`.
    pub fn as_raw(&self) -> *mut sys::ibv_srq {
        self.raw.as_ptr()
    }

    /// Keeps `mr` alive until this SRQ is destroyed. Refuses a region of another PD.
    pub(crate) fn keep_alive_mr(&self, mr: &Arc<MemoryRegion>) -> Result<()> {
        if !Arc::ptr_eq(mr.pd(), &self.pd) {
            return Err(Error::config(
                "the memory region belongs to another protection domain than the SRQ",
            ));
        }
        let mut kept = self.kept_mrs.borrow_mut();
        if !kept.iter().any(|m| Arc::ptr_eq(m, mr)) {
            kept.push(Arc::clone(mr));
        }
        Ok(())
    }

    /// Posts a linked chain of receive WRs with one `ibv_post_srq_recv`.
    ///
    /// # Safety
    /// `wr` heads a valid, null-terminated chain whose SGEs lie in regions this SRQ keeps
    /// alive ([`Self::keep_alive_mr`]), and no other thread posts to this SRQ meanwhile.
    #[inline(always)]
    pub(crate) unsafe fn post_recv_chain(&self, wr: *mut sys::ibv_recv_wr) -> Result<()> {
        let mut bad = std::ptr::null_mut();
        // SAFETY: the SRQ is alive; the chain is valid per the caller's contract.
        let rc = unsafe { sys::shim_post_srq_recv(self.raw.as_ptr(), wr, &mut bad) };
        if rc != 0 {
            return Err(Error::verb("ibv_post_srq_recv", rc));
        }
        Ok(())
    }
}

impl Drop for SharedReceiveQueue {
    fn drop(&mut self) {
        // SAFETY: every QP attached holds an Arc to this SRQ, so all are destroyed; the regions
        // its RECVs referenced are dropped after this call (fields drop after `drop`).
        unsafe { sys::ibv_destroy_srq(self.raw.as_ptr()) };
    }
}
