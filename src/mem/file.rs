//! A buffer that is a file's pages (perftest's `--mmap`): mapped shared, so that what the HCA
//! and the test write lands in the file.

use std::fs::OpenOptions;
use std::path::Path;

use memmap2::{MmapMut, MmapOptions};

use crate::error::{Error, Result};

/// `len` bytes of a file from `offset`, mapped shared and writable.
pub struct FileBuffer {
    /// The mapping's start, taken once: the HCA and the test reach the pages through it.
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    _map: MmapMut,
}

// SAFETY: the pages are reached only through raw pointers (MemoryRegion's atomics); the
// handle itself is plain data.
unsafe impl Send for FileBuffer {}
// SAFETY: as for Send: no method hands out a reference to the pages.
unsafe impl Sync for FileBuffer {}

fn open(path: &Path) -> Result<std::fs::File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| {
            Error::config(format!(
                "--mmap {}: cannot open it for writing: {e}",
                path.display()
            ))
        })
}

impl FileBuffer {
    /// Refuses, naming `--mmap`, a file that cannot be opened for writing (before the size of
    /// the mapping is known).
    pub fn check(path: &Path) -> Result<()> {
        open(path).map(drop)
    }

    /// Maps `len` bytes of `path` from `offset`. Refused, naming `--mmap`, when the file cannot
    /// be opened for writing, `offset` is not a multiple of the page size, or the file ends
    /// before `offset + len` (touching a page past its end would kill the process with SIGBUS).
    pub fn map(path: &Path, offset: u64, len: usize) -> Result<FileBuffer> {
        let shown = path.display();
        let file = open(path)?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
        if !offset.is_multiple_of(page) {
            return Err(Error::config(format!(
                "--mmap-offset {offset}: not a multiple of the page size ({page})"
            )));
        }
        let size = file
            .metadata()
            .map_err(|e| Error::config(format!("--mmap {shown}: {e}")))?
            .len();
        let need = offset + len as u64;
        if size < need {
            return Err(Error::config(format!(
                "--mmap {shown}: the file has {size} bytes; the test's buffer needs {len} from \
                 offset {offset} ({need} in all: truncate -s {need} {shown})"
            )));
        }
        // SAFETY: a shared mapping of a file another process may change is memory the HCA and
        // this process access only through MemoryRegion's atomics and raw pointers, never as
        // Rust references, so outside changes break no aliasing rule.
        let mut map = unsafe { MmapOptions::new().offset(offset).len(len).map_mut(&file) }
            .map_err(|e| Error::config(format!("--mmap {shown}: cannot map it: {e}")))?;
        let ptr = std::ptr::NonNull::new(map.as_mut_ptr())
            .ok_or_else(|| Error::config(format!("--mmap {shown}: mapped at null")))?;
        Ok(FileBuffer {
            ptr,
            len,
            _map: map,
        })
    }
}

// SAFETY: the mapping is owned by the FileBuffer, never remapped, and unmapped only on drop;
// moving the struct moves the handle, not the pages.
unsafe impl super::DmaBuffer for FileBuffer {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
}
