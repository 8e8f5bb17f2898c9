//! A port chosen for traffic, with its addressing fixed.

use std::sync::Arc;

use super::device::{Context, Gid, LinkLayer, PortAttr, PortState};
use crate::error::{Error, Result};

/// A port chosen for traffic: ACTIVE, with its addressing fixed (LID on InfiniBand, a GID index on
/// RoCE). QPs are created and connected through it.
#[derive(Debug, Clone)]
pub struct Port {
    ctx: Arc<Context>,
    num: u8,
    attr: PortAttr,
    gid_index: u32,
    gid: Gid,
    ack_timeout: u8,
}

impl Port {
    /// Checks that `num` is ACTIVE and fixes its GID: `gid_index`, or on Ethernet the RoCE v2
    /// IPv4-mapped GID, or index 0.
    pub fn open(ctx: &Arc<Context>, num: u8, gid_index: Option<u32>) -> Result<Port> {
        let count = ctx.port_count()?;
        if num == 0 || num > count {
            return Err(Error::config(format!(
                "device {} has no port {num} (ports 1..={count})",
                ctx.name()
            )));
        }
        let attr = ctx.query_port(num)?;
        if attr.state != PortState::Active {
            return Err(Error::config(format!(
                "port {num} of {} is {}, not ACTIVE (ibv_devinfo; is the link up?)",
                ctx.name(),
                attr.state
            )));
        }
        let gid_index = match gid_index {
            Some(i) => i,
            None if attr.link_layer == LinkLayer::Ethernet => {
                ctx.roce_v2_ipv4_gid(num, attr.gid_tbl_len).unwrap_or(0)
            }
            None => 0,
        };
        let bad_gid = || {
            Error::config(format!(
                "GID index {gid_index} is not valid on {} port {num} (table has {} entries; \
                 `ibv_devinfo -v` or show_gids lists them)",
                ctx.name(),
                attr.gid_tbl_len
            ))
        };
        if gid_index >= attr.gid_tbl_len {
            return Err(bad_gid());
        }
        let gid = ctx.gid(num, gid_index).map_err(|_| bad_gid())?;
        if attr.link_layer == LinkLayer::Ethernet && gid == Gid::default() {
            return Err(bad_gid());
        }
        Ok(Port {
            ctx: Arc::clone(ctx),
            num,
            attr,
            gid_index,
            gid,
            ack_timeout: super::defaults::TIMEOUT,
        })
    }

    /// The local ACK timeout exponent (4.096 µs × 2^t per try; libhrd's 14 by default) that RC
    /// QPs on this port connect with ([`crate::verbs::QueuePair::connect`]).
    pub fn with_ack_timeout(self, t: u8) -> Port {
        Port {
            ack_timeout: t,
            ..self
        }
    }

    /// See [`Port::with_ack_timeout`].
    pub fn ack_timeout(&self) -> u8 {
        self.ack_timeout
    }

    /// Opens a device by name (or the `port_index`-th ACTIVE port when `device` is None) and its port.
    pub fn open_by(
        device: Option<&str>,
        port_index: usize,
        gid_index: Option<u32>,
    ) -> Result<Port> {
        match device {
            Some(name) => {
                let ctx = Context::open(name)?;
                // On a named device, port_index counts that device's ports from 0.
                let num = u8::try_from(port_index + 1)
                    .map_err(|_| Error::config(format!("port index {port_index} is too large")))?;
                Port::open(&ctx, num, gid_index)
            }
            None => {
                let (ctx, num) = Context::open_port_index(port_index)?;
                Port::open(&ctx, num, gid_index)
            }
        }
    }

    /// The device context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
    /// Port number on the device (1-based).
    pub fn num(&self) -> u8 {
        self.num
    }
    /// Attributes read when the port was opened.
    pub fn attr(&self) -> &PortAttr {
        &self.attr
    }
    /// GID index used as source GID on RoCE.
    pub fn gid_index(&self) -> u32 {
        self.gid_index
    }
    /// The GID at that index.
    pub fn gid(&self) -> Gid {
        self.gid
    }
    /// True on RoCE, where peers are addressed by GID with a GRH.
    pub fn is_roce(&self) -> bool {
        self.attr.link_layer == LinkLayer::Ethernet
    }
}
