//! READ/atomic depths of an RC connection: what each side keeps in flight as initiator
//! (`max_rd_atomic`, at RTS) and accepts as responder (`max_dest_rd_atomic`, at RTR). A READ
//! beyond the responder's depth is a protocol error that kills the QP, and a device refuses a
//! depth above its own limit at the modify (EINVAL), so both are kept within the devices'.

use crate::error::Result;
use crate::verbs::Context;

/// What held an initiator depth below the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthBound {
    /// This device's `max_qp_init_rd_atom`.
    Device(u8),
    /// The depth the peer accepts, from its QP info.
    Peer(u8),
}

/// The depths a connection took, against those asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadDepth {
    /// READs / atomics this QP keeps in flight (its `max_rd_atomic`).
    pub initiator: u8,
    /// READs / atomics it accepts in flight (its `max_dest_rd_atomic`).
    pub responder: u8,
    /// What was asked: (initiator, responder).
    pub asked: (u8, u8),
    /// Why the initiator is below its ask, when it is.
    pub initiator_bound: Option<DepthBound>,
    /// This device's `max_qp_rd_atom`, when it held the responder below its ask.
    pub responder_bound: Option<u8>,
}

impl ReadDepth {
    /// The depths for an ask of (`initiator`, `responder`) on `ctx`'s device, against a peer
    /// that accepts `peer_accepts` (0: unknown, as from an older peer).
    pub fn negotiate(
        ctx: &Context,
        initiator: u8,
        responder: u8,
        peer_accepts: u8,
    ) -> Result<ReadDepth> {
        Ok(Self::within(
            (initiator, responder),
            clamp_u8(ctx.max_qp_init_rd_atom()?),
            clamp_u8(ctx.max_qp_rd_atom()?),
            peer_accepts,
        ))
    }

    fn within(asked: (u8, u8), init_limit: u8, resp_limit: u8, peer: u8) -> ReadDepth {
        let mut initiator = asked.0;
        let mut initiator_bound = None;
        if init_limit < initiator {
            initiator = init_limit;
            initiator_bound = Some(DepthBound::Device(init_limit));
        }
        if peer > 0 && peer < initiator {
            initiator = peer;
            initiator_bound = Some(DepthBound::Peer(peer));
        }
        let responder = asked.1.min(resp_limit);
        ReadDepth {
            initiator,
            responder,
            asked,
            initiator_bound,
            responder_bound: (responder < asked.1).then_some(resp_limit),
        }
    }

    /// One line for the user when a depth is below its ask (on `device`), or None.
    pub fn note(&self, device: &str) -> Option<String> {
        let mut parts = Vec::new();
        match self.initiator_bound {
            Some(DepthBound::Device(n)) => parts.push(format!(
                "{} READs/atomics in flight per QP instead of {}: {device} initiates at most {n} \
                 (max_qp_init_rd_atom)",
                self.initiator, self.asked.0
            )),
            Some(DepthBound::Peer(n)) => parts.push(format!(
                "{} READs/atomics in flight per QP instead of {}: the peer's device accepts {n}",
                self.initiator, self.asked.0
            )),
            None => {}
        }
        if let Some(n) = self.responder_bound {
            parts.push(format!(
                "{} accepted in flight instead of {}: {device} accepts at most {n} (max_qp_rd_atom)",
                self.responder, self.asked.1
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A device limit as the one byte the verbs' read depths are.
pub(super) fn clamp_u8(n: u32) -> u8 {
    n.min(255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_stay_within_both_devices_and_say_why() {
        // The original's 16 on a device and a peer with room: as asked, nothing to say.
        let d = ReadDepth::within((16, 16), 128, 128, 128);
        assert_eq!((d.initiator, d.responder, d.note("rxe0")), (16, 16, None));
        // A device that initiates fewer (EINVAL at RTS otherwise).
        let d = ReadDepth::within((16, 16), 8, 128, 128);
        assert_eq!(d.initiator, 8);
        let n = d.note("mlx4_0").unwrap();
        assert!(
            n.contains("8 READs/atomics in flight per QP instead of 16"),
            "{n}"
        );
        assert!(
            n.contains("mlx4_0 initiates at most 8 (max_qp_init_rd_atom)"),
            "{n}"
        );
        // A peer that accepts fewer: the peer is named, even under a lower device limit.
        let d = ReadDepth::within((16, 16), 8, 128, 4);
        assert_eq!(d.initiator_bound, Some(DepthBound::Peer(4)));
        assert!(d.note("x").unwrap().contains("the peer's device accepts 4"));
        // An older peer says nothing (0): only this device bounds.
        assert_eq!(ReadDepth::within((16, 16), 128, 128, 0).initiator, 16);
        // The responder within this device's own limit.
        let d = ReadDepth::within((16, 16), 128, 2, 0);
        assert_eq!(d.responder, 2);
        assert!(d
            .note("efa_0")
            .unwrap()
            .contains("efa_0 accepts at most 2 (max_qp_rd_atom)"));
    }
}
