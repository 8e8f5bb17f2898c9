//! NUMA binding with mbind(2); no libnuma needed.

use crate::error::{Error, Result};

const MPOL_BIND: libc::c_int = 2;

/// Binds `len` bytes at `addr` to `node`. Call before the pages are first touched.
///
/// # Safety
/// `addr..addr+len` must be a page-aligned mapping owned by the caller.
pub(crate) unsafe fn bind(addr: *mut u8, len: usize, node: u32) -> Result<()> {
    if node >= 1024 {
        return Err(Error::config(format!("NUMA node {node} is out of range")));
    }
    let mut mask = [0u64; 16];
    mask[(node / 64) as usize] |= 1 << (node % 64);
    // SAFETY: the caller owns the mapping; `mask` holds 1024 bits as maxnode says.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            1024usize,
            0u32,
        )
    };
    if rc != 0 {
        let e = Error::last_os("mbind");
        if e.errno() == Some(libc::EINVAL) {
            return Err(Error::config(format!(
                "NUMA node {node} does not exist on this host (numactl -H)"
            )));
        }
        return Err(e);
    }
    Ok(())
}
