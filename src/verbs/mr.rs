//! Memory regions.

use std::fmt;
use std::ops::BitOr;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use super::ProtectionDomain;
use crate::error::{Error, Result};
use crate::mem::DmaBuffer;
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
    /// Pages are pinned on demand (ODP), where the device supports it.
    pub const ON_DEMAND: Access = Access(sys::ibv_access_flags::IBV_ACCESS_ON_DEMAND.0);

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

/// A registered memory region that owns the memory it covers. It is shared as an
/// `Arc<MemoryRegion>`: every QP that posts a WR referencing it keeps a clone until the QP is
/// destroyed, so the memory is deregistered and freed only once no posted WR (signaled or not) can
/// touch it any more, whatever order the owners drop in.
///
/// The CPU reaches the memory only through atomics (the HCA may write it at any time, and several
/// threads may hold the `Arc`, so no `&[u8]` to it is handed to safe code): [`read`](Self::read),
/// [`write`](Self::write) and [`fill`](Self::fill) use relaxed atomic accesses;
/// [`as_slice`](Self::as_slice) is an `unsafe fn` for bulk access when the caller knows nothing
/// writes the memory.
///
/// Registering hands the buffer over; afterwards the memory is reachable only through the region:
/// ```
/// # use std::sync::Arc;
/// # use rdma_bench::mem::{HugeBuffer, Placement};
/// # use rdma_bench::verbs::{Access, MemoryRegion, ProtectionDomain};
/// fn register(pd: &Arc<ProtectionDomain>) -> rdma_bench::Result<Arc<MemoryRegion>> {
///     let buf = HugeBuffer::new(4096, Placement::default())?;
///     MemoryRegion::register(pd, buf, Access::LOCAL_WRITE)
/// }
/// ```
/// so the buffer cannot be dropped (or swapped, or written through a slice) under a region and
/// the QPs that use it:
/// ```compile_fail,E0382
/// # use std::sync::Arc;
/// # use rdma_bench::mem::{HugeBuffer, Placement};
/// # use rdma_bench::verbs::{Access, MemoryRegion, ProtectionDomain};
/// fn register(pd: &Arc<ProtectionDomain>) -> rdma_bench::Result<Arc<MemoryRegion>> {
///     let buf = HugeBuffer::new(4096, Placement::default())?;
///     let mr = MemoryRegion::register(pd, buf, Access::LOCAL_WRITE)?;
///     drop(buf);
///     Ok(mr)
/// }
/// ```
pub struct MemoryRegion {
    raw: NonNull<sys::ibv_mr>,
    pd: Arc<ProtectionDomain>,
    addr: *mut u8,
    len: usize,
    /// Dropped after `ibv_dereg_mr` (in `Drop`), so the HCA is done with the pages first.
    _memory: Box<dyn DmaBuffer>,
}

// SAFETY: the MR handle is immutable after registration; the memory it covers is shared with the
// HCA by design and reached only through atomics (or the unsafe slice view).
unsafe impl Send for MemoryRegion {}
// SAFETY: as above: every `&self` access to the memory is atomic, so threads sharing the region do
// not race; no method hands out a reference into it without `unsafe`.
unsafe impl Sync for MemoryRegion {}

impl fmt::Debug for MemoryRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("addr", &self.addr)
            .field("len", &self.len)
            .field("lkey", &self.lkey())
            .finish()
    }
}

impl MemoryRegion {
    /// Registers all of `memory` with `access`; the region owns the memory from now on.
    pub fn register(
        pd: &Arc<ProtectionDomain>,
        memory: impl DmaBuffer,
        access: Access,
    ) -> Result<Arc<MemoryRegion>> {
        let memory: Box<dyn DmaBuffer> = Box::new(memory);
        let (addr, len) = (memory.as_ptr(), memory.len());
        // SAFETY: the PD is alive; `memory` is a mapping of `len` bytes at `addr` (DmaBuffer's
        // contract) that this region owns and frees only after deregistering.
        let raw = unsafe { sys::shim_reg_mr(pd.as_raw(), addr.cast(), len, access.bits()) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_reg_mr"))?;
        Ok(Arc::new(MemoryRegion {
            raw,
            pd: Arc::clone(pd),
            addr,
            len,
            _memory: memory,
        }))
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
    /// True when `off..off+len` lies inside the region.
    pub fn contains(&self, off: usize, len: usize) -> bool {
        off.checked_add(len).is_some_and(|end| end <= self.len)
    }

    fn range(&self, off: usize, len: usize) -> *mut u8 {
        assert!(
            self.contains(off, len),
            "bytes {off}..{off}+{len} are outside the {}-byte region",
            self.len
        );
        self.addr.wrapping_add(off)
    }

    /// Copies `dst.len()` bytes at `off` out of the region. A concurrent WRITE by a peer may leave
    /// the copy torn, never unsound: each byte is a relaxed atomic load (so threads sharing the
    /// region through its `Arc` do not race either).
    ///
    /// # Panics
    /// If the range is outside the region.
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        let src = self.range(off, dst.len());
        for (i, d) in dst.iter_mut().enumerate() {
            *d = byte_at(src, i).load(Ordering::Relaxed);
        }
    }

    /// The bytes at `off..off+len`, copied out (see [`read`](Self::read)).
    pub fn to_vec(&self, off: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.read(off, &mut v);
        v
    }

    /// Copies `src` into the region at `off` with relaxed atomic stores, eight bytes at a time
    /// where aligned (a reply path copies every value it sends through here: a byte at a time
    /// was ~60 instructions of a 32-byte value). Data that a posted, not yet completed WR reads
    /// from here may go out old or new: order your writes with completions.
    ///
    /// # Panics
    /// If the range is outside the region.
    #[inline]
    pub fn write(&self, off: usize, src: &[u8]) {
        let dst = self.range(off, src.len());
        let head = dst.align_offset(8).min(src.len());
        let (first, rest) = src.split_at(head);
        for (i, &b) in first.iter().enumerate() {
            byte_at(dst, i).store(b, Ordering::Relaxed);
        }
        let words = rest.chunks_exact(8);
        let tail = words.remainder();
        for (w, bytes) in words.enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(bytes);
            // SAFETY: `dst + head` is 8-aligned and word `w` lies inside the checked range
            // (head + 8·(w+1) ≤ src.len()), in a mapping that lives as long as `self`; all CPU
            // access to region memory is atomic, so this races with nothing.
            unsafe { AtomicU64::from_ptr(dst.add(head).cast::<u64>().add(w)) }
                .store(u64::from_ne_bytes(word), Ordering::Relaxed);
        }
        let at = src.len() - tail.len();
        for (i, &b) in tail.iter().enumerate() {
            byte_at(dst, at + i).store(b, Ordering::Relaxed);
        }
    }

    /// The byte at `off`, with one relaxed atomic load (for polling a byte a peer WRITEs).
    ///
    /// # Panics
    /// If `off` is outside the region.
    #[inline(always)]
    pub fn load_u8(&self, off: usize) -> u8 {
        byte_at(self.range(off, 1), 0).load(Ordering::Relaxed)
    }

    /// Stores `v` at `off` with one relaxed atomic store.
    ///
    /// # Panics
    /// If `off` is outside the region.
    #[inline(always)]
    pub fn store_u8(&self, off: usize, v: u8) {
        byte_at(self.range(off, 1), 0).store(v, Ordering::Relaxed)
    }

    /// The aligned 8-byte word at `off` (native endian), with one acquire load: how a poller
    /// reads a slot a peer WRITEs without tearing it, and orders its reads of the rest after it.
    ///
    /// # Panics
    /// If the word is outside the region or its address is not 8-byte aligned (regions start
    /// page-aligned, so: `off` not a multiple of 8).
    #[inline(always)]
    pub fn load_u64(&self, off: usize) -> u64 {
        // SAFETY: `range` checked that the 8 bytes lie in the region, which lives as long as
        // `self`.
        unsafe { crate::mem::atomic_u64_at(self.range(off, 8)) }.load(Ordering::Acquire)
    }

    /// Stores the aligned 8-byte word `v` at `off` with one relaxed atomic store.
    ///
    /// # Panics
    /// As [`load_u64`](Self::load_u64).
    #[inline(always)]
    pub fn store_u64(&self, off: usize, v: u64) {
        // SAFETY: as in `load_u64`.
        unsafe { crate::mem::atomic_u64_at(self.range(off, 8)) }.store(v, Ordering::Relaxed)
    }

    /// Fills the whole region with `byte` (relaxed atomic stores, eight bytes at a time where
    /// aligned).
    pub fn fill(&self, byte: u8) {
        let head = self.addr.align_offset(8).min(self.len);
        let words = (self.len - head) / 8;
        let word = u64::from_ne_bytes([byte; 8]);
        for i in 0..head {
            byte_at(self.addr, i).store(byte, Ordering::Relaxed);
        }
        for w in 0..words {
            // SAFETY: `addr + head` is 8-aligned and word `w` lies inside the mapping (head +
            // 8·words ≤ len), which lives as long as `self`; all CPU access to region memory is
            // atomic, so this races with nothing.
            unsafe { AtomicU64::from_ptr(self.addr.add(head).cast::<u64>().add(w)) }
                .store(word, Ordering::Relaxed);
        }
        for i in head + words * 8..self.len {
            byte_at(self.addr, i).store(byte, Ordering::Relaxed);
        }
    }

    /// The whole region as a slice, for bulk reads.
    ///
    /// # Safety
    /// While the slice lives, nothing may write the memory: no local READ or atomic, no RECV, and
    /// no peer WRITE, SEND or atomic targeting it may be in flight.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is `len` bytes at `addr`; the caller excludes writers.
        unsafe { std::slice::from_raw_parts(self.addr, self.len) }
    }
}

/// Byte `i` after `base`, as an atomic (all CPU access to region memory is atomic, so threads
/// sharing a region never race; the HCA's DMA is outside the memory model).
#[inline(always)]
fn byte_at<'a>(base: *mut u8, i: usize) -> &'a AtomicU8 {
    // SAFETY: callers pass `base + i` inside a live region (checked by `range`); AtomicU8 has the
    // size and alignment of u8; the reference lives only for one load or store.
    unsafe { AtomicU8::from_ptr(base.add(i)) }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: `raw` is a live MR. Every QP that posted a WR referencing it holds an Arc to this
        // region until after ibv_destroy_qp, so no WR can reach it once we are dropped; the
        // memory itself is freed only after this call returns.
        unsafe { sys::ibv_dereg_mr(self.raw.as_ptr()) };
    }
}
