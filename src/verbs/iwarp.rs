//! iWARP devices (siw, cxgb4, irdma and qedr in iWARP mode): what sets them apart for a
//! benchmark. Their RC QPs reach RTS only through RDMA CM (the kernel's iWARP CM moves them
//! when the MPA exchange ends), they have no UC or UD QPs, a SEND needs a posted RECV on
//! arrival (no RNR retry), and a READ's sink is written by the responder, so it needs
//! `REMOTE_WRITE`.

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Context;
use crate::error::Error;
use crate::sys;

impl Context {
    /// Whether the device's transport is iWARP (`IBV_TRANSPORT_IWARP`).
    pub fn is_iwarp(&self) -> bool {
        // SAFETY: the context is open; its device and the transport field never change.
        unsafe { (*(*self.as_raw()).device).transport_type == sys::IBV_TRANSPORT_IWARP }
    }

    /// The addresses an iWARP port is reached at, IPv4 and global IPv6 (a link-local one needs
    /// a scope RDMA CM's peers do not give): those of its netdev, which its GID 0 names by MAC
    /// address (iWARP GIDs are the netdev's MAC, not an IP address).
    pub fn iwarp_addrs(&self, port: u8) -> Vec<IpAddr> {
        let Ok(gid) = self.gid(port, 0) else {
            return Vec::new();
        };
        let mac = &gid.0[..6];
        match netdev_with_mac(mac) {
            Some(netdev) => netdev_addrs(&netdev),
            None => Vec::new(),
        }
    }
}

/// The refusal for a paper benchmark (or a perftest tool without `-R`) on an iWARP device:
/// those exchange QP numbers and move the QPs themselves, which iWARP does not allow.
pub fn needs_rdma_cm(device: &str) -> Error {
    Error::config(format!(
        "{device} is an iWARP device: its QPs connect only through RDMA CM, and this benchmark \
         connects them by exchanging QP numbers (as the original does): on iWARP use the perftest \
         tools with -R (rdma-bench write-bw -d {device} -R), or pick a RoCE/InfiniBand device \
         with -d/--device"
    ))
}

/// The refusal for a UC or UD QP on an iWARP device, naming `flag` (as the user typed it) and
/// what to use instead.
pub fn rc_only(device: &str, qp_type: &str, flag: &str) -> Error {
    Error::config(format!(
        "{flag}: {device} is an iWARP device, which has RC QPs only (no {qp_type}): use RC"
    ))
}

/// The netdev whose hardware address is `mac`.
fn netdev_with_mac(mac: &[u8]) -> Option<String> {
    let want: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    let want = want.join(":");
    std::fs::read_dir("/sys/class/net")
        .ok()?
        .flatten()
        .find(|e| {
            std::fs::read_to_string(e.path().join("address"))
                .is_ok_and(|a| a.trim().eq_ignore_ascii_case(&want))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
}

/// The IPv4 and global IPv6 addresses of netdev `name`.
fn netdev_addrs(name: &str) -> Vec<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `list` receives a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut p = list;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs made; its name is a C string and its
        // address, when set, a sockaddr_in (AF_INET) or a sockaddr_in6 (AF_INET6).
        unsafe {
            let ifa = &*p;
            let addr = ifa.ifa_addr;
            if !addr.is_null() && CStr::from_ptr(ifa.ifa_name).to_bytes() == name.as_bytes() {
                match i32::from((*addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(addr as *const libc::sockaddr_in);
                        out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)).into());
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(addr as *const libc::sockaddr_in6);
                        let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                        if !ip.is_unicast_link_local() {
                            out.push(ip.into());
                        }
                    }
                    _ => {}
                }
            }
            p = ifa.ifa_next;
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}
