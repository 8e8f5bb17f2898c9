//! RAII owners of verbs objects, one file per object.
//!
//! Ownership is reference-counted upwards (a QP keeps its PD and CQs alive, a PD its context), so
//! C objects are always destroyed in the order the verbs require, whatever order Rust drops them in.
//! A memory region owns its memory, and a QP keeps every region and address handle that its posted
//! WRs reference until it is destroyed: memory a WR may still touch is never freed, whatever is
//! dropped when. A QP is driven by one thread (`Send`, not `Sync`), and posting takes `&mut`.
//! The hot path never touches the counts: it works on the raw handles cached in `hot` batches.

mod ah;
/// RDMA CM connections (when built with librdmacm).
#[cfg(has_rdmacm)]
pub mod cm;
mod comp_channel;
mod cq;
mod device;
mod gid_choice;
mod ip_group;
/// iWARP devices: the refusals and addresses that differ from RoCE and InfiniBand.
pub mod iwarp;
mod mr;
mod op;
mod pd;
mod port;
/// The mlx5 environment the original's scripts export, set by the paper benchmarks.
pub mod provider_env;
mod qp;
mod qp_info;
mod resources;
mod srq;
/// Which QP types a device's transport offers (iWARP: RC; EFA, usNIC: UD), and the refusal.
pub mod transport;
/// The `ibv_wr_*` post API (when the headers have it: [`crate::build_info::WR_API`]).
#[cfg(has_wr_api)]
mod wr;

pub use crate::error::WcStatus;
pub use ah::AddressHandle;
pub use cq::{wait_any, CompletionQueue, WorkCompletion};
#[cfg(has_rdmacm)]
pub(crate) use device::unknown_device;
pub use device::{
    devices, kernel_driver, port_state_word, Context, Gid, LinkLayer, PortAttr, PortState,
    SYSFS_CLASS,
};
pub use ip_group::IpGroup;
pub use mr::{Access, MemoryRegion};
pub use op::Op;

/// `IBV_WC_SEND`: the opcode of a SEND's completion.
pub const WC_SEND: u32 = crate::sys::ibv_wc_opcode::IBV_WC_SEND;
pub use pd::ProtectionDomain;
pub use port::{PathQos, Port};
pub use qp::{ConnectParams, DepthBound, QpCaps, QpType, QueuePair, ReadDepth};
pub use qp_info::{mtu_bytes, QpInfo};
pub use resources::{QpSpec, Resources};
pub use srq::SharedReceiveQueue;
#[cfg(has_wr_api)]
pub use wr::{Payload, Wr, WrGuard};

/// libhrd's connection parameters, kept so that numbers compare with the C suite.
pub mod defaults {
    /// Initial packet sequence number on both sides.
    pub const PSN: u32 = 3185;
    /// UD queue key shared by all UD QPs.
    pub const QKEY: u32 = 0x1111_1111;
    /// Local ACK timeout exponent (4.096 µs × 2^14 ≈ 67 ms).
    pub const TIMEOUT: u8 = 14;
    /// Transport retries.
    pub const RETRY_CNT: u8 = 7;
    /// RNR retries (7 = infinite).
    pub const RNR_RETRY: u8 = 7;
    /// Outstanding RDMA READs / atomics, both directions.
    pub const MAX_RD_ATOMIC: u8 = 16;
    /// Minimum RNR NAK timer field.
    pub const MIN_RNR_TIMER: u8 = 12;
    /// Hop limit in the GRH on RoCE.
    pub const HOP_LIMIT: u8 = 64;
}
