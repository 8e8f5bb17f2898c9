//! Memory for RDMA buffers: hugepage-backed when possible, NUMA-bound on request, and never left
//! behind (SysV segments are removed on drop and on SIGINT/SIGTERM).

mod anon;
mod file;
mod numa;
mod shm;

pub use anon::HugeBuffer;
pub use file::FileBuffer;
pub use numa::{node_free_hugepages, numa_nodes};
pub use shm::{live_segments, release_all_segments, ShmBuffer};

use std::fmt;
use std::str::FromStr;
use std::sync::Once;

/// Size of the hugepages we ask for (x86-64's 2 MiB).
pub const HUGEPAGE_SIZE: usize = 2 << 20;

/// Whether buffers must, may or must not use hugepages (`--hugepages auto|require|off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HugePolicy {
    /// Hugepages when available, else ordinary pages with one warning line.
    #[default]
    Auto,
    /// Hugepages or an error that says how to reserve them.
    Require,
    /// Ordinary pages.
    Off,
}

impl FromStr for HugePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(HugePolicy::Auto),
            "require" => Ok(HugePolicy::Require),
            "off" => Ok(HugePolicy::Off),
            _ => Err(format!(
                "'{s}' is not a hugepage policy (auto, require or off)"
            )),
        }
    }
}

impl fmt::Display for HugePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HugePolicy::Auto => "auto",
            HugePolicy::Require => "require",
            HugePolicy::Off => "off",
        })
    }
}

/// Where a buffer lives.
#[derive(Debug, Clone, Copy, Default)]
pub struct Placement {
    /// Hugepage policy.
    pub huge: HugePolicy,
    /// NUMA node to bind the memory to, if any.
    pub numa_node: Option<u32>,
}

/// Memory a [`crate::verbs::MemoryRegion`] can own: a fixed mapping that the HCA may read and
/// write through its physical pages for as long as the region is registered.
///
/// # Safety
/// Implementors guarantee that `as_ptr()..as_ptr() + len()` is mapped, readable and writable, that
/// it neither moves nor shrinks while the value lives (moving the value itself must not move the
/// memory), and that nothing but dropping the value unmaps or frees it. The value is the only way
/// to the memory in this process: no Rust reference to it exists or is made while the value lives,
/// and `as_ptr` carries write permission (not derived from a shared reference), so that the
/// region's atomic accesses and the HCA's DMA race with nothing the compiler assumes frozen.
/// (Another process mapping the same SysV segment is outside this process's memory model.)
pub unsafe trait DmaBuffer: Send + Sync + 'static {
    /// Start of the memory.
    fn as_ptr(&self) -> *mut u8;
    /// Usable length in bytes.
    fn len(&self) -> usize;
    /// Never true for the buffers of this crate.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// SAFETY: the memmap2 mapping is owned by the HugeBuffer, never remapped, and unmapped only on drop;
// moving the struct moves the handle, not the pages.
unsafe impl DmaBuffer for HugeBuffer {
    fn as_ptr(&self) -> *mut u8 {
        HugeBuffer::as_ptr(self)
    }
    fn len(&self) -> usize {
        HugeBuffer::len(self)
    }
}

// SAFETY: the segment stays attached at `as_ptr()` until the ShmBuffer is dropped (shmdt in Drop);
// other processes sharing it cannot unmap our attachment.
unsafe impl DmaBuffer for ShmBuffer {
    fn as_ptr(&self) -> *mut u8 {
        ShmBuffer::as_ptr(self)
    }
    fn len(&self) -> usize {
        ShmBuffer::len(self)
    }
}

/// The byte at `p` as an atomic: all CPU access to memory a NIC or another process writes goes
/// through atomics, so threads sharing it never race (DMA is outside the memory model).
///
/// Word and byte accessors may overlap (a region read byte-wise while a poller loads a word of
/// it): mixed-size atomics, which the Rust memory model leaves undefined but every target we
/// build for performs as plain loads and stores of the sizes asked for. This is a deliberate
/// deviation, the same one C's `volatile` polling of NIC-written memory makes.
///
/// # Safety
/// `p` points into live memory that stays mapped while the returned reference is used (for one
/// load or store).
#[inline(always)]
pub(crate) unsafe fn atomic_u8_at<'a>(p: *mut u8) -> &'a std::sync::atomic::AtomicU8 {
    // SAFETY: the caller passes a pointer into live memory; AtomicU8 has the size and alignment
    // of u8.
    unsafe { std::sync::atomic::AtomicU8::from_ptr(p) }
}

/// The 8-byte word at `p` as an atomic (see [`atomic_u8_at`]).
///
/// # Safety
/// `p` points to 8 bytes of live memory that stay mapped while the reference is used.
///
/// # Panics
/// If `p` is not 8-byte aligned.
#[inline(always)]
pub(crate) unsafe fn atomic_u64_at<'a>(p: *mut u8) -> &'a std::sync::atomic::AtomicU64 {
    assert!(
        (p as usize).is_multiple_of(8),
        "unaligned 8-byte word at {p:p}"
    );
    // SAFETY: the caller passes 8 live bytes; aligned (checked above).
    unsafe { std::sync::atomic::AtomicU64::from_ptr(p.cast::<u64>()) }
}

/// Hints the CPU to bring `r`'s cache line in (no effect on program state; a no-op on targets
/// without a prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    prefetch_ptr(r as *const T)
}

/// [`prefetch`] of an address that needs no reference: the hint neither reads through `p` nor
/// faults, whatever `p` is (a hot loop prefetches the line an index points at without first
/// checking that the index is in bounds).
#[inline(always)]
pub fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 only hints the cache; it cannot fault or change memory (not even for an
    // unmapped address), and SSE is part of every x86_64 target.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

pub(crate) fn round_up(n: usize, to: usize) -> usize {
    n.div_ceil(to) * to
}

/// Says once per process that hugepages were wanted but not had.
pub(crate) fn warn_fallback(what: &str, err: &crate::Error) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        eprintln!("warning: no hugepages for {what} ({err}); using ordinary pages");
    });
}

/// Free 2 MiB hugepages on this host, from /proc/meminfo.
pub fn hugepages_free() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("HugePages_Free:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// 2 MiB hugepages of each NUMA node: (node, pool size, free), from sysfs; empty on a host
/// without NUMA information.
pub fn hugepages_by_node() -> Vec<(u32, u64, u64)> {
    hugepages_by_node_in(std::path::Path::new("/sys"))
}

/// [`hugepages_by_node`] from the sysfs tree mounted at `sys` (a copy, in tests).
pub fn hugepages_by_node_in(sys: &std::path::Path) -> Vec<(u32, u64, u64)> {
    let nodes_dir = sys.join("devices/system/node");
    let read = |p: String| -> u64 {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    let mut nodes: Vec<u32> = std::fs::read_dir(&nodes_dir)
        .map(|d| {
            d.filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("node")?
                    .parse()
                    .ok()
            })
            .collect()
        })
        .unwrap_or_default();
    nodes.sort_unstable();
    nodes
        .into_iter()
        .map(|n| {
            let dir = format!("{}/node{n}/hugepages/hugepages-2048kB", nodes_dir.display());
            (
                n,
                read(format!("{dir}/nr_hugepages")),
                read(format!("{dir}/free_hugepages")),
            )
        })
        .collect()
}

/// The base page size (4096 when the system does not say).
pub fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant and has no memory effects.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// The L1 data cache line (64 when the system does not say).
pub fn cache_line() -> u64 {
    // SAFETY: sysconf reads a constant and has no memory effects.
    let v = unsafe { libc::sysconf(libc::_SC_LEVEL1_DCACHE_LINESIZE) };
    if v > 0 {
        v as u64
    } else {
        64
    }
}

/// The locked-memory limit of this process (`RLIMIT_MEMLOCK`, soft) in bytes; `None` when
/// unlimited. Memory registration pins pages against it (root with CAP_IPC_LOCK is exempt).
pub fn memlock_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscall with a valid out-pointer.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut r) };
    (rc == 0 && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_parses_its_three_words_only() {
        assert_eq!("auto".parse::<HugePolicy>(), Ok(HugePolicy::Auto));
        assert_eq!("require".parse::<HugePolicy>(), Ok(HugePolicy::Require));
        assert_eq!("off".parse::<HugePolicy>(), Ok(HugePolicy::Off));
        assert_eq!(
            "yes".parse::<HugePolicy>(),
            Err("'yes' is not a hugepage policy (auto, require or off)".to_string())
        );
    }

    #[test]
    fn round_up_to_hugepage() {
        assert_eq!(round_up(1, HUGEPAGE_SIZE), HUGEPAGE_SIZE);
        assert_eq!(round_up(HUGEPAGE_SIZE, HUGEPAGE_SIZE), HUGEPAGE_SIZE);
        assert_eq!(
            round_up(HUGEPAGE_SIZE + 1, HUGEPAGE_SIZE),
            2 * HUGEPAGE_SIZE
        );
    }
}
