//! The IP side of a RoCE v2 multicast group: the host's membership of the group's IP address on
//! the port's netdev (an IGMP or MLD join), which RDMA CM's `rdma_join_multicast` takes for its
//! users and `ibv_attach_mcast` does not. Without it a switch that snoops IGMP/MLD does not
//! forward the group to this host, and a kernel whose RoCE provider does not join at the IP
//! layer itself (Soft-RoCE before Linux 6.10) drops the group's datagrams before they reach the
//! device.

use std::net::{Ipv4Addr, Ipv6Addr, UdpSocket};

use super::{Gid, Port};
use crate::error::{Error, Result};

/// A membership of one IP multicast group, held by a UDP socket: left when dropped.
#[derive(Debug)]
pub struct IpGroup {
    _socket: UdpSocket,
}

impl IpGroup {
    /// Joins the IP group that `mgid` names on `port`'s netdev. None on a port whose packets
    /// are not IP (InfiniBand, RoCE v1): there the GID is the whole address.
    pub fn join(port: &Port, mgid: Gid) -> Result<Option<IpGroup>> {
        if !port.is_roce_v2() {
            return Ok(None);
        }
        let fail = |e: std::io::Error| {
            Error::config(format!(
                "cannot join the IP multicast group of {mgid} on {} port {}: {e}",
                port.context().name(),
                port.num()
            ))
        };
        let socket = match (mgid.ipv4(), port.gid().ipv4()) {
            (Some(group), Some(local)) => {
                let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(fail)?;
                s.join_multicast_v4(&group, &local).map_err(fail)?;
                s
            }
            (None, None) => {
                let netdev = port.context().gid_netdev(port.num(), port.gid_index());
                let name = std::ffi::CString::new(netdev.unwrap_or_default()).unwrap_or_default();
                // SAFETY: `name` is a NUL-terminated string.
                let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
                if index == 0 {
                    return Err(fail(std::io::Error::other("the GID has no netdev")));
                }
                let s = UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0)).map_err(fail)?;
                s.join_multicast_v6(&Ipv6Addr::from(mgid.0), index)
                    .map_err(fail)?;
                s
            }
            _ => {
                return Err(Error::config(format!(
                    "the multicast group {mgid} and {} GID index {} ({}) are not of one IP \
                     family",
                    port.context().name(),
                    port.gid_index(),
                    port.gid()
                )))
            }
        };
        Ok(Some(IpGroup { _socket: socket }))
    }
}
