//! NUMA binding with mbind(2), and the host's nodes and their free hugepages from sysfs; no
//! libnuma needed.

use std::path::Path;

use super::{round_up, HUGEPAGE_SIZE};
use crate::error::{Error, Result};

const NODES: &str = "/sys/devices/system/node";

/// The host's online NUMA nodes (`/sys/devices/system/node/online`, such as `0-1,3`); None when
/// the kernel does not say (no NUMA support: then there is one node, 0).
pub fn numa_nodes() -> Option<Vec<u32>> {
    let list = std::fs::read_to_string(Path::new(NODES).join("online")).ok()?;
    let mut nodes = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (u32, u32) = (lo.parse().ok()?, hi.parse().ok()?);
        nodes.extend(lo..=hi);
    }
    Some(nodes)
}

/// Free 2 MiB hugepages on `node`, if sysfs reports them.
pub fn node_free_hugepages(node: u32) -> Option<u64> {
    let p = format!("{NODES}/node{node}/hugepages/hugepages-2048kB/free_hugepages");
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Refuses a hugepage buffer of `len` bytes bound to `node` when the node has fewer free
/// hugepages than it needs. The kernel would map it from the whole host's pool and then fail
/// when a page is first touched on the node (SIGBUS, or EFAULT from ibv_reg_mr).
pub(crate) fn check_huge_fits(len: usize, node: u32) -> Result<()> {
    let need = (round_up(len, HUGEPAGE_SIZE) / HUGEPAGE_SIZE) as u64;
    match node_free_hugepages(node) {
        Some(free) if free < need => Err(Error::config(format!(
            "NUMA node {node} has {free} free 2 MiB hugepages and the buffer needs {need} \
             (reserve them on that node: echo N > {NODES}/node{node}/hugepages/hugepages-2048kB/nr_hugepages)"
        ))),
        _ => Ok(()),
    }
}

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
