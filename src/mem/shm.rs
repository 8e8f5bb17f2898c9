//! SysV shared-memory buffers with a key, so that several processes can map one segment (the
//! original suite's HERD and sequencer workers do). The creator removes the segment when it drops
//! the buffer, and a process killed by a repeated SIGINT/SIGTERM removes it from the signal handler
//! ([`crate::control`] calls [`release_all_segments`]) — libhrd leaves them behind.

use std::sync::atomic::{AtomicI32, Ordering};

use super::{numa, round_up, warn_fallback, HugePolicy, Placement, HUGEPAGE_SIZE};
use crate::error::{Error, Result};

/// Segments this process created and has not removed yet; -1 marks a free slot. A fixed array of
/// atomics so the signal handler can read it without locks.
static LIVE: [AtomicI32; 64] = [const { AtomicI32::new(-1) }; 64];

fn remember(id: i32) -> Result<()> {
    for slot in &LIVE {
        if slot
            .compare_exchange(-1, id, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return Ok(());
        }
    }
    Err(Error::config(
        "more than 64 live SysV segments in one process",
    ))
}

fn forget(id: i32) {
    for slot in &LIVE {
        if slot
            .compare_exchange(id, -1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
    }
}

/// Ids of the segments this process created and still owns.
pub fn live_segments() -> Vec<i32> {
    LIVE.iter()
        .map(|s| s.load(Ordering::Acquire))
        .filter(|&id| id >= 0)
        .collect()
}

/// Marks every segment this process created for removal. Async-signal-safe (one syscall per
/// segment, no allocation, no lock); mappings stay usable until detached.
pub fn release_all_segments() {
    for slot in &LIVE {
        let id = slot.swap(-1, Ordering::AcqRel);
        if id >= 0 {
            // SAFETY: IPC_RMID takes no buffer; `id` is a segment we created.
            unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
}

/// A SysV shared-memory segment attached at a page-aligned address. Created with a key (other
/// processes may attach it with [`ShmBuffer::attach`]); the creator removes it on drop.
#[derive(Debug)]
pub struct ShmBuffer {
    id: i32,
    addr: *mut u8,
    len: usize,
    huge: bool,
    owner: bool,
}

// SAFETY: the segment is plain memory; access goes through raw pointers and unsafe slices.
unsafe impl Send for ShmBuffer {}
// SAFETY: as above.
unsafe impl Sync for ShmBuffer {}

impl ShmBuffer {
    /// Creates segment `key` of at least `len` bytes (fails if the key exists: a stale segment of
    /// an earlier run is reported, not reused).
    pub fn create(key: i32, len: usize, place: Placement) -> Result<ShmBuffer> {
        if len == 0 {
            return Err(Error::config("buffer size must be positive"));
        }
        // Hugepages bound to a node that lacks them are refused before the segment exists.
        let huge_segment = || {
            if let Some(node) = place.numa_node {
                numa::check_huge_fits(len, node)?;
            }
            shmget(key, len, true)
        };
        let (id, huge) = match place.huge {
            HugePolicy::Off => (shmget(key, len, false)?, false),
            HugePolicy::Require => (huge_segment()?, true),
            HugePolicy::Auto => match huge_segment() {
                Ok(id) => (id, true),
                Err(e) if e.errno() == Some(libc::EEXIST) => return Err(e),
                Err(e) => {
                    warn_fallback("a shared segment", &e);
                    (shmget(key, len, false)?, false)
                }
            },
        };
        if let Err(e) = remember(id) {
            // SAFETY: `id` is the segment we just created.
            unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
            return Err(e);
        }
        let mut buf = ShmBuffer {
            id,
            addr: std::ptr::null_mut(),
            len,
            huge,
            owner: true,
        };
        buf.addr = shmat(id)?; // on error, drop removes the segment
        if let Some(node) = place.numa_node {
            let mapped = if huge {
                round_up(len, HUGEPAGE_SIZE)
            } else {
                round_up(len, 4096)
            };
            // SAFETY: the segment is attached at `addr`, page-aligned, and not yet touched.
            unsafe { numa::bind(buf.addr, mapped, node)? };
        }
        Ok(buf)
    }

    /// Attaches an existing segment `key` made by another process; this side never removes it.
    pub fn attach(key: i32, len: usize) -> Result<ShmBuffer> {
        // SAFETY: plain syscall; size 0 would also do, `len` checks the segment is large enough.
        let id = unsafe { libc::shmget(key, len, 0) };
        if id < 0 {
            return Err(Error::last_os("shmget"));
        }
        let addr = shmat(id)?;
        Ok(ShmBuffer {
            id,
            addr,
            len,
            huge: false,
            owner: false,
        })
    }

    /// Start of the segment.
    pub fn as_ptr(&self) -> *mut u8 {
        self.addr
    }
    /// Usable length.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// True when backed by hugepages (as far as this side knows).
    pub fn is_huge(&self) -> bool {
        self.huge
    }
    /// The SysV id.
    pub fn id(&self) -> i32 {
        self.id
    }
    /// The bytes.
    ///
    /// # Safety
    /// No RDMA operation or other process may write this memory while the slice lives.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: attached for `len` bytes; the caller excludes concurrent writers.
        unsafe { std::slice::from_raw_parts(self.addr, self.len) }
    }
    /// The bytes, mutably.
    ///
    /// # Safety
    /// No RDMA operation or other process may touch this memory while the slice lives.
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: attached for `len` bytes; the caller excludes concurrent access.
        unsafe { std::slice::from_raw_parts_mut(self.addr, self.len) }
    }
}

impl Drop for ShmBuffer {
    fn drop(&mut self) {
        if !self.addr.is_null() {
            // SAFETY: `addr` came from shmat and MRs on it are gone (they must not outlive it).
            unsafe { libc::shmdt(self.addr.cast()) };
        }
        if self.owner {
            forget(self.id);
            // SAFETY: IPC_RMID on the segment we created.
            unsafe { libc::shmctl(self.id, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
}

fn shmget(key: i32, len: usize, huge: bool) -> Result<i32> {
    let (size, flags, verb) = if huge {
        (
            round_up(len, HUGEPAGE_SIZE),
            libc::SHM_HUGETLB,
            "shmget(SHM_HUGETLB)",
        )
    } else {
        (len, 0, "shmget")
    };
    // SAFETY: plain syscall.
    let id = unsafe { libc::shmget(key, size, libc::IPC_CREAT | libc::IPC_EXCL | 0o600 | flags) };
    if id < 0 {
        let e = Error::last_os(verb);
        if e.errno() == Some(libc::EEXIST) {
            return Err(Error::Verb {
                verb: "shmget",
                errno: libc::EEXIST,
                hint: Some(
                    "a segment with this key exists (a stale run?): `ipcs -m`, `ipcrm -M KEY`",
                ),
            });
        }
        return Err(e);
    }
    Ok(id)
}

fn shmat(id: i32) -> Result<*mut u8> {
    // SAFETY: attach anywhere, read-write.
    let addr = unsafe { libc::shmat(id, std::ptr::null(), 0) };
    if addr as isize == -1 {
        return Err(Error::last_os("shmat"));
    }
    Ok(addr.cast())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn segment_exists(id: i32) -> bool {
        // SAFETY: shmid_ds is plain old data; all-zero is a valid value.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: IPC_STAT writes into `ds`.
        unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) == 0 }
    }

    fn test_key(salt: i32) -> i32 {
        0x5244_0000 | ((std::process::id() as i32 & 0xfff) << 4) | salt
    }

    #[test]
    fn segment_is_removed_on_drop_and_shared_by_key() {
        let key = test_key(1);
        let mut a = ShmBuffer::create(
            key,
            8192,
            Placement {
                huge: HugePolicy::Off,
                numa_node: None,
            },
        )
        .unwrap();
        let id = a.id();
        assert!(live_segments().contains(&id));
        // SAFETY: no RDMA here.
        unsafe { a.as_mut_slice()[100] = 42 };
        let b = ShmBuffer::attach(key, 8192).unwrap();
        // SAFETY: no RDMA here.
        assert_eq!(unsafe { b.as_slice()[100] }, 42);
        drop(b);
        drop(a);
        assert!(!segment_exists(id));
        assert!(!live_segments().contains(&id));
    }

    #[test]
    fn existing_key_is_refused_not_reused() {
        let key = test_key(2);
        let p = Placement {
            huge: HugePolicy::Off,
            numa_node: None,
        };
        let _a = ShmBuffer::create(key, 4096, p).unwrap();
        let e = ShmBuffer::create(key, 4096, p).unwrap_err().to_string();
        assert!(e.contains("EEXIST") && e.contains("ipcrm"), "{e}");
    }

    #[test]
    fn require_without_hugepages_says_how_to_reserve() {
        let r = ShmBuffer::create(
            test_key(3),
            4096,
            Placement {
                huge: HugePolicy::Require,
                numa_node: None,
            },
        );
        if super::super::hugepages_free() == 0 {
            let e = r.unwrap_err().to_string();
            assert!(
                e.contains("shmget(SHM_HUGETLB) failed") && e.contains("nr_hugepages"),
                "{e}"
            );
        } else {
            assert!(r.unwrap().is_huge());
        }
    }

    /// Child half of the signal test (run by it with --ignored): create a segment, report its id,
    /// and ignore the stop request the first signal makes, so that only a deliberate second
    /// signal (the handler's "die now") can end it.
    #[test]
    #[ignore = "child process of segment_is_removed_when_the_owner_gets_sigterm"]
    fn signal_child() {
        let out = std::env::var("RDMA_BENCH_SHM_CHILD").expect("run by the signal test");
        crate::control::install_stop_signals().unwrap();
        let buf = ShmBuffer::create(
            test_key(4),
            4096,
            Placement {
                huge: HugePolicy::Off,
                numa_node: None,
            },
        )
        .unwrap();
        std::fs::write(&out, buf.id().to_string()).unwrap();
        std::thread::sleep(std::time::Duration::from_secs(30));
        panic!("not killed");
    }

    #[test]
    fn segment_is_removed_when_the_owner_gets_sigterm() {
        for sig in [libc::SIGTERM, libc::SIGINT] {
            let out =
                std::env::temp_dir().join(format!("rdma-bench-shm-{}-{sig}", std::process::id()));
            let _ = std::fs::remove_file(&out);
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "mem::shm::tests::signal_child",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("RDMA_BENCH_SHM_CHILD", &out)
                .spawn()
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let id: i32 = loop {
                if let Some(id) = std::fs::read_to_string(&out)
                    .ok()
                    .and_then(|s| s.parse().ok())
                {
                    break id;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "child never created its segment"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            assert!(segment_exists(id));
            let pid = child.id() as i32;
            let kill = || {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(pid, sig) };
            };
            // Two signals in quick succession (as `timeout` sends) are one stop request.
            kill();
            std::thread::sleep(std::time::Duration::from_millis(50));
            kill();
            std::thread::sleep(std::time::Duration::from_millis(500));
            assert!(
                child.try_wait().unwrap().is_none(),
                "signal {sig} twice in 50 ms killed the child"
            );
            assert!(segment_exists(id));
            // A second signal a second later is deliberate: remove the segments and die.
            std::thread::sleep(std::time::Duration::from_millis(700));
            kill();
            let status = child.wait().unwrap();
            assert!(!status.success());
            assert!(
                !segment_exists(id),
                "segment {id} outlived its owner after signal {sig}"
            );
            let _ = std::fs::remove_file(&out);
        }
    }
}
