//! Private anonymous buffers (one process), MAP_HUGETLB when possible.

use std::ptr::NonNull;

use memmap2::{MmapMut, MmapOptions};

use super::{numa, round_up, warn_fallback, HugePolicy, Placement, HUGEPAGE_SIZE};
use crate::error::{Error, Result};

/// A zeroed, page-aligned buffer for MRs, unmapped on drop. Deregister MRs on it first (an MR
/// registered with [`crate::verbs::MemoryRegion::register`] must not outlive it).
#[derive(Debug)]
pub struct HugeBuffer {
    /// Owns the mapping (unmapped on drop); never dereferenced after `ptr` is taken.
    _map: MmapMut,
    /// The mapping's base, taken once from `&mut` so that writes through it are allowed.
    ptr: NonNull<u8>,
    mapped: usize,
    len: usize,
    huge: bool,
}

// SAFETY: the buffer exclusively owns its mapping; the raw pointer is only its address.
unsafe impl Send for HugeBuffer {}
// SAFETY: `&self` methods hand out the address or, through `unsafe fn`s, slices whose contracts
// exclude concurrent writers.
unsafe impl Sync for HugeBuffer {}

impl HugeBuffer {
    /// Maps at least `len` bytes placed as asked.
    pub fn new(len: usize, place: Placement) -> Result<HugeBuffer> {
        if len == 0 {
            return Err(Error::config("buffer size must be positive"));
        }
        let (mut map, huge) = match place.huge {
            HugePolicy::Off => (plain(len)?, false),
            HugePolicy::Require => (huge(len, place.numa_node)?, true),
            HugePolicy::Auto => match huge(len, place.numa_node) {
                Ok(m) => (m, true),
                Err(e) => {
                    warn_fallback("an anonymous buffer", &e);
                    (plain(len)?, false)
                }
            },
        };
        let mapped = map.len();
        let ptr = NonNull::new(map.as_mut_ptr()).ok_or_else(|| Error::config("mmap gave NULL"))?;
        if let Some(node) = place.numa_node {
            // SAFETY: the mapping is ours, page-aligned, and not yet touched.
            unsafe { numa::bind(ptr.as_ptr(), mapped, node)? };
        }
        Ok(HugeBuffer {
            _map: map,
            ptr,
            mapped,
            len,
            huge,
        })
    }

    /// Start of the buffer.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    /// Usable length (what was asked for).
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true: a buffer has at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// True when backed by hugepages.
    pub fn is_huge(&self) -> bool {
        self.huge
    }
    /// The buffer as 8-byte words, for a data structure that lives in hugepages (the MICA-style
    /// store). Safe: a `HugeBuffer` is DMA-visible only after `MemoryRegion::register` took it
    /// by value, so while it can be borrowed here nothing but this `&mut` reaches it.
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: the mapping is page-aligned (so 8-aligned) and at least `len` bytes; `len / 8`
        // whole words fit; `&mut self` excludes every other access (see above); the memory is
        // initialised (zero-filled by mmap, or written since).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u64>(), self.len / 8) }
    }

    /// The buffer as bytes, for the same data structures as [`words_mut`](Self::words_mut) (the
    /// store's log) and safe for the same reason.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes at `ptr` are mapped and initialised (as in `words_mut`); `&mut self`
        // excludes every other access, the HCA's included (see `words_mut`).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes.
    ///
    /// # Safety
    /// No RDMA operation that writes this memory may be in flight while the slice lives.
    pub unsafe fn as_slice(&self) -> &[u8] {
        debug_assert!(self.len <= self.mapped);
        // SAFETY: `len` bytes at `ptr` are mapped for as long as `self`; the caller excludes
        // writers.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    /// The bytes, mutably.
    ///
    /// # Safety
    /// No RDMA operation that reads or writes this memory may be in flight while the slice lives.
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` excludes other CPU access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Hugepages for `len` bytes, refused up front when they are to be bound to `node` and the
/// node lacks them.
fn huge(len: usize, node: Option<u32>) -> Result<MmapMut> {
    if let Some(node) = node {
        numa::check_huge_fits(len, node)?;
    }
    MmapOptions::new()
        .len(round_up(len, HUGEPAGE_SIZE))
        .huge(Some(21))
        .map_anon()
        .map_err(|e| Error::verb("mmap(MAP_HUGETLB)", e.raw_os_error().unwrap_or(0)))
}

fn plain(len: usize) -> Result<MmapMut> {
    MmapOptions::new()
        .len(len)
        .map_anon()
        .map_err(|e| Error::verb("mmap", e.raw_os_error().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_gives_plain_zeroed_pages() {
        let b = HugeBuffer::new(
            10_000,
            Placement {
                huge: HugePolicy::Off,
                numa_node: None,
            },
        )
        .unwrap();
        assert!(!b.is_huge());
        assert_eq!(b.len(), 10_000);
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        // SAFETY: no RDMA anywhere in this test.
        assert!(unsafe { b.as_slice() }.iter().all(|&x| x == 0));
    }

    #[test]
    fn require_matches_what_the_host_has() {
        let r = HugeBuffer::new(
            1 << 20,
            Placement {
                huge: HugePolicy::Require,
                numa_node: None,
            },
        );
        if super::super::hugepages_free() == 0 {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("mmap(MAP_HUGETLB) failed") && e.contains("nr_hugepages"),
                "{e}"
            );
        } else {
            let b = r.unwrap();
            assert!(b.is_huge());
            assert_eq!(b.as_ptr() as usize % HUGEPAGE_SIZE, 0);
        }
    }

    #[test]
    fn auto_always_gives_memory() {
        let b = HugeBuffer::new(4096, Placement::default()).unwrap();
        if super::super::hugepages_free() == 0 {
            assert!(
                !b.is_huge(),
                "no hugepages are free, yet the buffer claims to be huge"
            );
        }
        assert_eq!(b.len(), 4096);
        assert_eq!(b.as_ptr() as usize % 4096, 0);
    }

    #[test]
    fn bad_numa_node_is_named() {
        let e = HugeBuffer::new(
            4096,
            Placement {
                huge: HugePolicy::Off,
                numa_node: Some(1000),
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("NUMA node 1000"), "{e}");
    }
}
