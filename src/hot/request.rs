//! Request regions: memory that clients WRITE requests into and server workers poll (the
//! paper's ws-sequencer, ws-echo and HERD). The master process creates the region as a SysV
//! segment and registers it; workers, in another process, attach the same segment and poll it.

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::mem::{atomic_u64_at, atomic_u8_at, ShmBuffer};

/// Where request slot (worker `w`, client `c`, window slot `s`) lies: the original's
/// `OFFSET(w, c, s) = w·clients·window + c·window + s`, in slots of `slot_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLayout {
    /// Worker threads polling the region.
    pub workers: usize,
    /// Clients writing into it.
    pub clients: usize,
    /// Slots per (worker, client): the client's window.
    pub window: usize,
    /// Bytes per slot (a multiple of 8).
    pub slot_bytes: usize,
}

impl SlotLayout {
    /// Bytes the layout spans; refuses a layout beyond `region_bytes` or an overflow.
    pub fn check(&self, region_bytes: usize) -> Result<usize> {
        if self.slot_bytes == 0 || !self.slot_bytes.is_multiple_of(8) {
            return Err(Error::config(format!(
                "request slots must be a positive multiple of 8 bytes, not {}",
                self.slot_bytes
            )));
        }
        let span = self
            .workers
            .checked_mul(self.clients)
            .and_then(|x| x.checked_mul(self.window))
            .and_then(|x| x.checked_mul(self.slot_bytes));
        match span {
            Some(s) if s <= region_bytes => Ok(s),
            _ => Err(Error::config(format!(
                "{} workers × {} clients × window {} × {} B slots do not fit the {region_bytes}-byte request region",
                self.workers, self.clients, self.window, self.slot_bytes
            ))),
        }
    }

    /// Byte offset of slot (`w`, `c`, `s`).
    #[inline(always)]
    pub fn offset(&self, w: usize, c: usize, s: usize) -> usize {
        debug_assert!(w < self.workers && c < self.clients && s < self.window);
        ((w * self.clients + c) * self.window + s) * self.slot_bytes
    }
}

/// A worker's view of the master's request region: the segment attached by key, read and
/// cleared with relaxed atomic loads and stores (clients' WRITEs land here at any time).
pub struct RequestRegion {
    buf: ShmBuffer,
}

impl RequestRegion {
    /// Attaches segment `key` (made by the master) of at least `len` bytes.
    pub fn attach(key: i32, len: usize) -> Result<Self> {
        let buf = ShmBuffer::attach(key, len).map_err(|e| {
            Error::config(format!(
                "cannot attach the master's request region (SysV key {key}, {len} bytes): {e} — \
                 is the master running with the same --shm-key?"
            ))
        })?;
        Ok(RequestRegion { buf })
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Never true for an attached region.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == 0
    }

    fn at(&self, off: usize, len: usize) -> *mut u8 {
        assert!(
            off.checked_add(len).is_some_and(|e| e <= self.buf.len()),
            "bytes {off}..+{len} are outside the {}-byte request region",
            self.buf.len()
        );
        self.buf.as_ptr().wrapping_add(off)
    }

    /// The aligned word at `off`: a slot's tag, non-zero once a request arrived.
    ///
    /// # Panics
    /// If the word is outside the region or not 8-byte aligned.
    #[inline(always)]
    pub fn load_u64(&self, off: usize) -> u64 {
        // SAFETY: `at` checked the 8 bytes lie in the segment, attached while `self` lives.
        // Acquire: the request's other bytes are read after its tag.
        unsafe { atomic_u64_at(self.at(off, 8)) }.load(Ordering::Acquire)
    }

    /// Stores `v` at the aligned word `off` (0 frees a slot for its client's next request).
    ///
    /// # Panics
    /// As [`load_u64`](Self::load_u64).
    #[inline(always)]
    pub fn store_u64(&self, off: usize, v: u64) {
        // SAFETY: as in `load_u64`.
        unsafe { atomic_u64_at(self.at(off, 8)) }.store(v, Ordering::Relaxed)
    }

    /// The byte at `off` (HERD's opcode: one compare tells a request from an answered one).
    ///
    /// # Panics
    /// If `off` is outside the region.
    #[inline(always)]
    pub fn load_u8(&self, off: usize) -> u8 {
        // SAFETY: `at` checked the byte lies in the segment, attached while `self` lives.
        unsafe { atomic_u8_at(self.at(off, 1)) }.load(Ordering::Relaxed)
    }

    /// Stores `v` at byte `off` (HERD marks a request answered by lowering its opcode).
    ///
    /// # Panics
    /// As [`load_u8`](Self::load_u8).
    #[inline(always)]
    pub fn store_u8(&self, off: usize, v: u8) {
        // SAFETY: as in `load_u8`.
        unsafe { atomic_u8_at(self.at(off, 1)) }.store(v, Ordering::Relaxed)
    }

    /// Copies `dst.len()` bytes at `off` (a request's payload).
    ///
    /// # Panics
    /// If the range is outside the region.
    #[inline]
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        let src = self.at(off, dst.len());
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: `at` checked the whole range lies in the attached segment.
            *d = unsafe { atomic_u8_at(src.wrapping_add(i)) }.load(Ordering::Relaxed);
        }
    }
}
