//! What a peer needs to know to reach a QP and the memory behind it.

use super::Gid;

/// Connection attributes of a QP and the buffer it exposes, exchanged through a registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpInfo {
    /// QP number.
    pub qpn: u32,
    /// Initial packet sequence number of its send queue.
    pub psn: u32,
    /// LID of its port (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// GID of its port (RoCE; may be zero on InfiniBand).
    pub gid: [u8; 16],
    /// Address of the exposed buffer (0 when none).
    pub buf_addr: u64,
    /// Size of the exposed buffer in bytes.
    pub buf_size: u64,
    /// Remote key of the exposed buffer.
    pub rkey: u32,
    /// Active MTU of its port (`ibv_mtu`: 1 = 256 B … 5 = 4096 B; 0 unknown): a connection runs
    /// at the smaller of its two ends' MTUs, as perftest's exchange agrees on.
    pub mtu: u32,
    /// RDMA READs / atomics the QP accepts in flight (its responder depth: libhrd's 16 within
    /// the device's `max_qp_rd_atom`; 0 unknown): the peer initiates no more than this many,
    /// whatever its own limits.
    pub rd_atomic: u8,
}

impl QpInfo {
    /// The GID as a typed value.
    pub fn gid(&self) -> Gid {
        Gid(self.gid)
    }
    /// The MTU in bytes (None when unknown).
    pub fn mtu_bytes(&self) -> Option<u32> {
        mtu_bytes(self.mtu)
    }
}

/// Bytes of an `ibv_mtu` value (1 = 256 … 5 = 4096); None for anything else.
pub fn mtu_bytes(mtu: u32) -> Option<u32> {
    (1..=5).contains(&mtu).then(|| 128 << mtu)
}
