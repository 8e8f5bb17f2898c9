//! Memory regions.

use std::ops::BitOr;
use std::ptr::NonNull;
use std::sync::Arc;

use super::ProtectionDomain;
use crate::error::{Error, Result};
use crate::sys;

/// MR access rights. Ask for the minimum: remote rights let a peer touch the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access(u32);

impl Access {
    /// Local read only (always allowed).
    pub const NONE: Access = Access(0);
    /// The HCA may write here (RECV buffers, READ and atomic results).
    pub const LOCAL_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0);
    /// Peers may RDMA WRITE here.
    pub const REMOTE_WRITE: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0);
    /// Peers may RDMA READ from here.
    pub const REMOTE_READ: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0);
    /// Peers may run atomics here.
    pub const REMOTE_ATOMIC: Access = Access(sys::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0);

    /// The raw `ibv_access_flags` bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

/// A registered memory region. The memory itself is owned elsewhere (see [`crate::mem`]); the MR
/// must not outlive it, which [`MemoryRegion::register`]'s safety contract states.
#[derive(Debug)]
pub struct MemoryRegion {
    raw: NonNull<sys::ibv_mr>,
    pd: Arc<ProtectionDomain>,
    addr: *mut u8,
    len: usize,
}

// SAFETY: the MR handle is immutable after registration; the memory it covers is shared with the
// HCA by design and accessed through raw pointers only.
unsafe impl Send for MemoryRegion {}
// SAFETY: as above.
unsafe impl Sync for MemoryRegion {}

impl MemoryRegion {
    /// Registers `len` bytes at `addr` with `access`.
    ///
    /// # Safety
    /// `addr..addr+len` must be mapped memory that stays valid (not freed or unmapped) until this
    /// MR is dropped, since the HCA may read or write it at any time until then.
    pub unsafe fn register(
        pd: &Arc<ProtectionDomain>,
        addr: *mut u8,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion> {
        // SAFETY: the PD is alive; the caller guarantees the memory range.
        let raw = unsafe { sys::shim_reg_mr(pd.as_raw(), addr.cast(), len, access.bits()) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_reg_mr"))?;
        Ok(MemoryRegion {
            raw,
            pd: Arc::clone(pd),
            addr,
            len,
        })
    }

    /// Local key, for SGEs.
    pub fn lkey(&self) -> u32 {
        // SAFETY: `raw` is a live MR.
        unsafe { self.raw.as_ref().lkey }
    }
    /// Remote key, for peers.
    pub fn rkey(&self) -> u32 {
        // SAFETY: `raw` is a live MR.
        unsafe { self.raw.as_ref().rkey }
    }
    /// Start of the region.
    pub fn addr(&self) -> *mut u8 {
        self.addr
    }
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for an empty region.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The PD it was registered in.
    pub fn pd(&self) -> &Arc<ProtectionDomain> {
        &self.pd
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live MR; no WR posted by this crate references it past this point
        // (batches borrow the MR).
        unsafe { sys::ibv_dereg_mr(self.raw.as_ptr()) };
    }
}
