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
    qos: PathQos,
    pkey_index: u16,
    gid_note: Option<String>,
}

/// What the network headers of a port's QPs carry (the address vector's QoS fields): the
/// service level (the IB SL; a RoCE driver may map it to a VLAN priority) and, in the GRH of
/// RoCE packets, the traffic class (on RoCE v2 the IP header's DSCP and ECN byte), the flow
/// label and the hop limit (the IP TTL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathQos {
    /// Service level, 0-15.
    pub sl: u8,
    /// GRH traffic class (RoCE v2: the IP TOS byte, DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// GRH flow label, 20 bits.
    pub flow_label: u32,
    /// GRH hop limit (RoCE v2: the IP TTL).
    pub hop_limit: u8,
}

impl PathQos {
    /// Largest service level.
    pub const MAX_SL: u8 = 15;
    /// Largest flow label (20 bits).
    pub const MAX_FLOW_LABEL: u32 = (1 << 20) - 1;

    /// True when it asks for any GRH field other than the defaults (which a LID-routed
    /// InfiniBand path, sent without a GRH, cannot carry).
    pub fn needs_grh(&self) -> bool {
        let d = PathQos::default();
        (self.traffic_class, self.flow_label, self.hop_limit)
            != (d.traffic_class, d.flow_label, d.hop_limit)
    }
}

impl Default for PathQos {
    /// SL 0, traffic class 0, no flow label, libhrd's hop limit.
    fn default() -> Self {
        PathQos {
            sl: 0,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: super::defaults::HOP_LIMIT,
        }
    }
}

impl Port {
    /// Checks that `num` is ACTIVE and fixes its GID: `gid_index`, or on Ethernet perftest's
    /// pick (a RoCE v2 IPv4-mapped GID when there is one; [`Port::gid_note`] says why not), or
    /// index 0.
    pub fn open(ctx: &Arc<Context>, num: u8, gid_index: Option<u32>) -> Result<Port> {
        Port::open_preferring(ctx, num, gid_index, false)
    }

    /// [`Port::open`], picking an IPv6 GID first (not IPv4-mapped) with `prefer_ipv6` when no
    /// `gid_index` is given (perftest's `--ipv6`).
    pub fn open_preferring(
        ctx: &Arc<Context>,
        num: u8,
        gid_index: Option<u32>,
        prefer_ipv6: bool,
    ) -> Result<Port> {
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
        let (gid_index, gid_note) = match gid_index {
            Some(i) => (i, None),
            // An iWARP GID is the netdev's MAC: one entry, nothing to choose.
            None if attr.link_layer == LinkLayer::Ethernet && !ctx.is_iwarp() => {
                match super::gid_choice::pick_gid(ctx, num, attr.gid_tbl_len, prefer_ipv6) {
                    Some(p) => (p.index, p.note),
                    None => (0, None),
                }
            }
            None => (0, None),
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
        if attr.link_layer != LinkLayer::InfiniBand && gid == Gid::default() {
            return Err(bad_gid());
        }
        Ok(Port {
            ctx: Arc::clone(ctx),
            num,
            attr,
            gid_index,
            gid,
            ack_timeout: super::defaults::TIMEOUT,
            qos: PathQos::default(),
            pkey_index: 0,
            gid_note,
        })
    }

    /// Why the GID picked for this port is not a RoCE v2 IPv4-mapped one, when it is not (and
    /// no `gid_index` was given).
    pub fn gid_note(&self) -> Option<&str> {
        self.gid_note.as_deref()
    }

    /// The QoS fields every QP and address handle made on this port puts in its packets;
    /// refused when they need a GRH ([`PathQos::needs_grh`]) on an InfiniBand port, whose
    /// LID-routed paths carry none.
    pub fn with_qos(self, qos: PathQos) -> Result<Port> {
        if qos.needs_grh() && !self.addressed_by_gid() {
            return Err(Error::config(format!(
                "{}:{} is an InfiniBand port whose paths are routed by LID without a GRH: no \
                 traffic class, flow label or hop limit can be set there",
                self.ctx.name(),
                self.num
            )));
        }
        Ok(Port { qos, ..self })
    }

    /// See [`Port::with_qos`].
    pub fn qos(&self) -> PathQos {
        self.qos
    }

    /// The P_Key table index this port's QPs take (0 by default); None when the port's table
    /// has no such entry.
    pub fn with_pkey_index(self, index: u16) -> Option<Port> {
        (index < self.attr.pkey_tbl_len.max(1)).then_some(Port {
            pkey_index: index,
            ..self
        })
    }

    /// See [`Port::with_pkey_index`].
    pub fn pkey_index(&self) -> u16 {
        self.pkey_index
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
    /// True when its GID is a RoCE v2 one: packets are UDP/IP, and the kernel takes their
    /// hop limit (the IP TTL) from its route to the peer, not from the address vector.
    pub fn is_roce_v2(&self) -> bool {
        self.is_roce() && self.ctx.gid_type(self.num, self.gid_index).as_deref() == Some("RoCE v2")
    }
    /// True on RoCE (an Ethernet link layer).
    pub fn is_roce(&self) -> bool {
        self.attr.link_layer == LinkLayer::Ethernet
    }
    /// True where peers are addressed by GID with a GRH (RoCE, EFA), false where by LID
    /// (InfiniBand).
    pub fn addressed_by_gid(&self) -> bool {
        self.attr.link_layer != LinkLayer::InfiniBand
    }
}
