//! Queue pairs (RC, UC, UD): creation, the INIT→RTR→RTS state machine, and the `ibv_wr_*` API.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::ah::address_vector;
use super::{
    defaults, AddressHandle, CompletionQueue, MemoryRegion, PathQos, Port, ProtectionDomain,
    QpInfo, SharedReceiveQueue,
};
use crate::error::{Error, Result};
use crate::sys;
use sys::ibv_qp_attr_mask as M;

mod depth;
mod mcast;
mod post;

use depth::clamp_u8;
pub use depth::{DepthBound, ReadDepth};

/// Transport of a QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected (WRITE and SEND only).
    Uc,
    /// Unreliable datagram (SEND only, MTU-sized messages).
    Ud,
}

impl QpType {
    /// The transport's usual name: RC, UC or UD.
    pub fn name(self) -> &'static str {
        match self {
            QpType::Rc => "RC",
            QpType::Uc => "UC",
            QpType::Ud => "UD",
        }
    }

    fn raw(self) -> u32 {
        match self {
            QpType::Rc => sys::ibv_qp_type::IBV_QPT_RC,
            QpType::Uc => sys::ibv_qp_type::IBV_QPT_UC,
            QpType::Ud => sys::ibv_qp_type::IBV_QPT_UD,
        }
    }
}

/// Queue sizes requested at creation (and granted, when read back from a QP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpCaps {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// SGEs per send WR.
    pub max_send_sge: u32,
    /// SGEs per receive WR.
    pub max_recv_sge: u32,
    /// Largest inline payload.
    pub max_inline_data: u32,
}

impl Default for QpCaps {
    /// libhrd's: depth 128 each way, one SGE, 60 bytes inline (the paper-era ConnectX-3 limit).
    fn default() -> Self {
        QpCaps {
            max_send_wr: 128,
            max_recv_wr: 128,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 60,
        }
    }
}

/// How [`QueuePair::connect_with`] sets up the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectParams {
    /// Path MTU (`ibv_mtu` value); None: the smaller of the port's active MTU and the peer's
    /// ([`QpInfo::mtu`], when known). Capped at 4096 either way.
    pub path_mtu: Option<u32>,
    /// READs / atomics this QP keeps in flight as initiator (at most what the peer accepts).
    pub max_rd_atomic: u8,
    /// READs / atomics this QP accepts in flight as responder.
    pub max_dest_rd_atomic: u8,
    /// Initial PSN of this QP's send queue (what its info told the peer).
    pub sq_psn: u32,
    /// Local ACK timeout exponent.
    pub timeout: u8,
    /// The path's QoS fields; None: the port's ([`Port::qos`]). perftest's `--flow_label`
    /// gives each QP its own flow label.
    pub qos: Option<PathQos>,
}

impl Default for ConnectParams {
    /// libhrd's.
    fn default() -> Self {
        ConnectParams {
            path_mtu: None,
            max_rd_atomic: defaults::MAX_RD_ATOMIC,
            max_dest_rd_atomic: defaults::MAX_RD_ATOMIC,
            sq_psn: defaults::PSN,
            timeout: defaults::TIMEOUT,
            qos: None,
        }
    }
}

/// The `ibv_wr_*` operations a [`QueuePair::new_ex`] QP is asked to support.
#[cfg(has_wr_api)]
const EX_SEND_OPS: u64 = (sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE.0
    | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM.0
    | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_SEND.0
    | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_SEND_WITH_IMM.0
    | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_READ.0
    | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP.0
    | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD.0)
    as u64;

/// The extended QP handle behind the `ibv_wr_*` API; headers without that API have no
/// `struct ibv_qp_ex`, and the pointer is always null.
#[cfg(has_wr_api)]
pub(super) type RawQpEx = sys::ibv_qp_ex;
#[cfg(not(has_wr_api))]
pub(super) type RawQpEx = std::ffi::c_void;

/// A refused QP creation (EINVAL) with what it asked beyond the limits the device reports, or,
/// when depths and SGE counts are within them, the inline size it does not report.
fn refused_caps(e: Error, port: &Port, caps: &QpCaps) -> Error {
    if e.errno() != Some(libc::EINVAL) {
        return e;
    }
    let ctx = port.context();
    let Ok((max_wr, max_sge)) = ctx.qp_limits() else {
        return e;
    };
    let dev = ctx.name();
    let depth = caps.max_send_wr.max(caps.max_recv_wr);
    let sges = caps.max_send_sge.max(caps.max_recv_sge);
    let note = if depth > max_wr {
        format!("a queue depth of {depth} is above {dev}'s max_qp_wr of {max_wr}")
    } else if sges > max_sge {
        format!("{sges} SGEs per WR is above {dev}'s max_sge of {max_sge}")
    } else if caps.max_inline_data > 0 {
        format!(
            "the depths ({}/{}) and SGE counts are within {dev}'s limits, so the {}-byte inline \
             size is the likely cause ({dev} does not report its inline limit: try a smaller \
             --max-inline or -I)",
            caps.max_send_wr, caps.max_recv_wr, caps.max_inline_data
        )
    } else {
        return e;
    };
    e.noted(note)
}

/// Serial numbers of QPs, so that a batch built for one QP can tell it is handed another (even one
/// the allocator put at a dead QP's address).
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// A queue pair, created in the INIT state (UD QPs go straight to RTS).
///
/// A QP is driven by one thread: it is `Send` but not `Sync`, and everything that posts (or opens
/// an `ibv_wr_*` batch, [`QueuePair::wr_start`]) takes `&mut self`. Memory and address handles that
/// posted WRs reference are kept alive by the QP itself until `ibv_destroy_qp` has returned.
///
/// Handing a QP to another thread compiles:
/// ```
/// # use rdma_bench::verbs::QueuePair;
/// fn hand_over(qp: QueuePair) {
///     std::thread::spawn(move || drop(qp)).join().unwrap();
/// }
/// ```
/// Driving one QP from two threads at once does not:
/// ```compile_fail,E0277
/// # use rdma_bench::verbs::QueuePair;
/// fn share(qp: &QueuePair) {
///     std::thread::scope(|s| {
///         s.spawn(|| qp.qp_num());
///         s.spawn(|| qp.qp_num());
///     });
/// }
/// ```
#[derive(Debug)]
pub struct QueuePair {
    raw: NonNull<sys::ibv_qp>,
    /// Non-null only for QPs made with [`QueuePair::new_ex`] (always null, and unread, in a
    /// build without the `ibv_wr_*` API).
    #[cfg_attr(not(has_wr_api), allow(dead_code))]
    pub(super) ex: *mut RawQpEx,
    serial: u64,
    /// What send batches compare their serial with: `serial`, or 0 while an `ibv_wr_*` batch is
    /// open (a leaked [`super::WrGuard`] leaves it open: send posts are refused until the next
    /// `wr_start` aborts it, instead of spinning on the provider's held lock).
    pub(super) send_key: u64,
    qp_type: QpType,
    caps: QpCaps,
    port: Port,
    pd: Arc<ProtectionDomain>,
    send_cq: Arc<CompletionQueue>,
    recv_cq: Arc<CompletionQueue>,
    /// Regions and AHs that WRs posted on this QP may reference; released after the QP is
    /// destroyed (fields drop after `Drop::drop` runs).
    kept_mrs: Vec<Arc<MemoryRegion>>,
    kept_ahs: Vec<Arc<AddressHandle>>,
    /// The SRQ its RECVs come from, if made with one: destroyed after this QP.
    srq: Option<Arc<SharedReceiveQueue>>,
    /// Multicast groups (MGID, MLID) it is attached to: detached before it is destroyed.
    groups: Vec<(super::Gid, u16)>,
}

// SAFETY: the QP's handles may be used from any thread, one at a time; `QueuePair` is not `Sync`,
// and posting needs `&mut self`, so no two threads ever drive it at once.
unsafe impl Send for QueuePair {}

impl QueuePair {
    /// Creates a QP on `port` and moves it to INIT (UD: to RTS).
    pub fn new(
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
        qp_type: QpType,
        caps: QpCaps,
    ) -> Result<QueuePair> {
        Self::create(pd, port, send_cq, recv_cq, qp_type, caps, None)
    }

    /// Like [`QueuePair::new`], with its RECVs taken from `srq` (its own receive queue is
    /// empty: `caps`' receive sizes are ignored). The QP keeps the SRQ alive.
    pub fn with_srq(
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
        qp_type: QpType,
        caps: QpCaps,
        srq: &Arc<SharedReceiveQueue>,
    ) -> Result<QueuePair> {
        if !Arc::ptr_eq(srq.pd(), pd) {
            return Err(Error::config(
                "the SRQ belongs to another protection domain than the QP",
            ));
        }
        Self::create(pd, port, send_cq, recv_cq, qp_type, caps, Some(srq))
    }

    fn create(
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
        qp_type: QpType,
        caps: QpCaps,
        srq: Option<&Arc<SharedReceiveQueue>>,
    ) -> Result<QueuePair> {
        same_device(pd, port, send_cq, recv_cq)?;
        pd.context().check_qp_type(qp_type)?;
        let mut cap = raw_caps(caps);
        if srq.is_some() {
            cap.max_recv_wr = 0;
            cap.max_recv_sge = 0;
        }
        let mut attr = sys::ibv_qp_init_attr {
            send_cq: send_cq.as_raw(),
            recv_cq: recv_cq.as_raw(),
            srq: srq.map_or(std::ptr::null_mut(), |s| s.as_raw()),
            qp_type: qp_type.raw(),
            sq_sig_all: 0,
            cap,
            ..Default::default()
        };
        // SAFETY: the PD and CQs are alive and `attr` is fully initialised.
        let raw = unsafe { sys::ibv_create_qp(pd.as_raw(), &mut attr) };
        let raw = NonNull::new(raw)
            .ok_or_else(|| refused_caps(Error::last_os("ibv_create_qp"), port, &caps))?;
        let mut qp = Self::finish(
            raw,
            std::ptr::null_mut(),
            attr.cap,
            pd,
            port,
            send_cq,
            recv_cq,
            qp_type,
        )?;
        qp.srq = srq.cloned();
        Ok(qp)
    }

    /// Like [`QueuePair::new`], but also enables the `ibv_wr_*` post API (`QueuePair::wr_start`).
    /// Refused (one line that says why) by a build against headers without that API
    /// ([`crate::build_info::WR_API`]).
    #[cfg(not(has_wr_api))]
    pub fn new_ex(
        _pd: &Arc<ProtectionDomain>,
        _port: &Port,
        _send_cq: &Arc<CompletionQueue>,
        _recv_cq: &Arc<CompletionQueue>,
        _qp_type: QpType,
        _caps: QpCaps,
    ) -> Result<QueuePair> {
        Err(Error::config(crate::build_info::NO_WR_API))
    }

    /// Like [`QueuePair::new`], but also enables the `ibv_wr_*` post API ([`QueuePair::wr_start`]).
    #[cfg(has_wr_api)]
    pub fn new_ex(
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
        qp_type: QpType,
        caps: QpCaps,
    ) -> Result<QueuePair> {
        same_device(pd, port, send_cq, recv_cq)?;
        pd.context().check_qp_type(qp_type)?;
        let mut send_ops = EX_SEND_OPS;
        if qp_type != QpType::Rc {
            send_ops &= !(sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_READ.0
                | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP.0
                | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD.0)
                as u64;
        }
        if qp_type == QpType::Ud {
            send_ops &= !(sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE.0
                | sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM.0)
                as u64;
        }
        let mut attr = sys::ibv_qp_init_attr_ex {
            send_cq: send_cq.as_raw(),
            recv_cq: recv_cq.as_raw(),
            qp_type: qp_type.raw(),
            cap: raw_caps(caps),
            pd: pd.as_raw(),
            comp_mask: (sys::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0
                | sys::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0),
            send_ops_flags: send_ops,
            ..Default::default()
        };
        // SAFETY: the context, PD and CQs are alive and `attr` is fully initialised.
        let raw = unsafe { sys::shim_create_qp_ex(pd.context().as_raw(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            let e = Error::last_os("ibv_create_qp_ex");
            match e.errno() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => Error::config(format!(
                    "device {} does not support the ibv_wr_* post API (ibv_create_qp_ex: {e})",
                    pd.context().name()
                )),
                _ => refused_caps(e, port, &caps),
            }
        })?;
        // SAFETY: the QP was created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, so it has a qp_ex.
        let ex = unsafe { sys::shim_qp_to_qp_ex(raw.as_ptr()) };
        Self::finish(raw, ex, attr.cap, pd, port, send_cq, recv_cq, qp_type)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        raw: NonNull<sys::ibv_qp>,
        ex: *mut RawQpEx,
        cap: sys::ibv_qp_cap,
        pd: &Arc<ProtectionDomain>,
        port: &Port,
        send_cq: &Arc<CompletionQueue>,
        recv_cq: &Arc<CompletionQueue>,
        qp_type: QpType,
    ) -> Result<QueuePair> {
        let serial = NEXT_SERIAL.fetch_add(1, Ordering::Relaxed);
        let mut qp = QueuePair {
            raw,
            ex,
            serial,
            send_key: serial,
            qp_type,
            caps: QpCaps {
                max_send_wr: cap.max_send_wr,
                max_recv_wr: cap.max_recv_wr,
                max_send_sge: cap.max_send_sge,
                max_recv_sge: cap.max_recv_sge,
                max_inline_data: cap.max_inline_data,
            },
            port: port.clone(),
            pd: Arc::clone(pd),
            send_cq: Arc::clone(send_cq),
            recv_cq: Arc::clone(recv_cq),
            kept_mrs: Vec::new(),
            kept_ahs: Vec::new(),
            srq: None,
            groups: Vec::new(),
        };
        qp.modify_to_init()?;
        if qp_type == QpType::Ud {
            qp.modify(
                &sys::ibv_qp_attr {
                    qp_state: sys::ibv_qp_state::IBV_QPS_RTR,
                    ..Default::default()
                },
                M::IBV_QP_STATE,
            )?;
            qp.modify(
                &sys::ibv_qp_attr {
                    qp_state: sys::ibv_qp_state::IBV_QPS_RTS,
                    sq_psn: defaults::PSN,
                    ..Default::default()
                },
                M::IBV_QP_STATE | M::IBV_QP_SQ_PSN,
            )?;
        }
        Ok(qp)
    }

    /// Applies attributes computed elsewhere (the RDMA CM's `rdma_init_qp_attr`).
    #[cfg(has_rdmacm)]
    pub(super) fn modify_with(&mut self, attr: &sys::ibv_qp_attr, mask: M) -> Result<()> {
        self.modify(attr, mask)
    }

    fn modify(&mut self, attr: &sys::ibv_qp_attr, mask: M) -> Result<()> {
        let mut attr = *attr;
        // SAFETY: the QP is alive; `attr` is initialised for every field `mask` names.
        let rc = unsafe { sys::ibv_modify_qp(self.raw.as_ptr(), &mut attr, mask.0 as i32) };
        if rc != 0 {
            return Err(Error::verb("ibv_modify_qp", rc));
        }
        Ok(())
    }

    fn modify_to_init(&mut self) -> Result<()> {
        let mut attr = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_INIT,
            pkey_index: self.port.pkey_index(),
            port_num: self.port.num(),
            ..Default::default()
        };
        let mut mask = M::IBV_QP_STATE | M::IBV_QP_PKEY_INDEX | M::IBV_QP_PORT;
        match self.qp_type {
            QpType::Ud => {
                attr.qkey = defaults::QKEY;
                mask |= M::IBV_QP_QKEY;
            }
            QpType::Rc | QpType::Uc => {
                // Remote rights are granted per MR; the QP allows every kind it may carry.
                let mut access = sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
                if self.qp_type == QpType::Rc {
                    access |= sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0
                        | sys::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0;
                }
                attr.qp_access_flags = access;
                mask |= M::IBV_QP_ACCESS_FLAGS;
            }
        }
        self.modify(&attr, mask)
    }

    /// Connects an RC or UC QP to `remote`: INIT→RTR→RTS with libhrd's parameters and the
    /// port's ACK timeout ([`Port::with_ack_timeout`]). Returns the read depths it took.
    pub fn connect(&mut self, remote: &QpInfo) -> Result<ReadDepth> {
        let p = ConnectParams {
            timeout: self.port.ack_timeout(),
            ..ConnectParams::default()
        };
        self.connect_with(remote, &p)
    }

    /// Connects an RC or UC QP to `remote` with explicit parameters (perftest's tools: the path
    /// MTU both sides agreed on, the read depth each side advertised, their own PSN). Returns
    /// the read depths it took: `p`'s, within both devices' limits.
    pub fn connect_with(&mut self, remote: &QpInfo, p: &ConnectParams) -> Result<ReadDepth> {
        if self.qp_type == QpType::Ud {
            return Err(Error::config(
                "UD QPs are not connected; address peers with an AddressHandle",
            ));
        }
        // RoCE routes IPv4-mapped GIDs over IPv4 and the others over IPv6: one of each never
        // meets (the modify fails, or the peer waits out its connect timeout).
        let (ours, theirs) = (self.port.gid(), remote.gid());
        if self.port.is_roce()
            && theirs.0 != [0; 16]
            && ours.ipv4().is_some() != theirs.ipv4().is_some()
        {
            return Err(Error::config(format!(
                "the two ends' GIDs are of different families: ours {ours} (index {} of {}:{}), \
                 the peer's {theirs}; pick GIDs of one family on both sides (--gid-index; \
                 `rdma-bench doctor` lists the GIDs)",
                self.port.gid_index(),
                self.port.context().name(),
                self.port.num()
            )));
        }
        // The smaller end's MTU: a packet of the larger one is dropped on the way (a READ
        // response of 4096 B to a 1024-B port), and the QP then fails with a protocol error.
        let local = self.port.attr().active_mtu;
        let agreed = match remote.mtu {
            0 => local,
            theirs => local.min(theirs),
        };
        let mut rtr = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_RTR,
            path_mtu: p.path_mtu.unwrap_or(agreed).min(sys::ibv_mtu::IBV_MTU_4096),
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn,
            ah_attr: address_vector(&self.port, p.qos.unwrap_or(self.port.qos()), remote),
            ..Default::default()
        };
        let mut mask = M::IBV_QP_STATE
            | M::IBV_QP_AV
            | M::IBV_QP_PATH_MTU
            | M::IBV_QP_DEST_QPN
            | M::IBV_QP_RQ_PSN;
        // Read depths within both devices' limits: what this side accepts within its own
        // device's, what it initiates within its own and what the peer accepts.
        let depth = match self.qp_type {
            QpType::Rc => ReadDepth::negotiate(
                self.port.context(),
                p.max_rd_atomic,
                p.max_dest_rd_atomic,
                remote.rd_atomic,
            )?,
            QpType::Uc | QpType::Ud => ReadDepth {
                initiator: 0,
                responder: 0,
                asked: (0, 0),
                initiator_bound: None,
                responder_bound: None,
            },
        };
        if self.qp_type == QpType::Rc {
            rtr.max_dest_rd_atomic = depth.responder;
            rtr.min_rnr_timer = defaults::MIN_RNR_TIMER;
            mask |= M::IBV_QP_MAX_DEST_RD_ATOMIC | M::IBV_QP_MIN_RNR_TIMER;
        }
        self.modify(&rtr, mask)?;

        let mut rts = sys::ibv_qp_attr {
            qp_state: sys::ibv_qp_state::IBV_QPS_RTS,
            sq_psn: p.sq_psn,
            ..Default::default()
        };
        let mut mask = M::IBV_QP_STATE | M::IBV_QP_SQ_PSN;
        if self.qp_type == QpType::Rc {
            rts.timeout = p.timeout;
            rts.retry_cnt = defaults::RETRY_CNT;
            rts.rnr_retry = defaults::RNR_RETRY;
            rts.max_rd_atomic = depth.initiator;
            mask = mask
                | M::IBV_QP_TIMEOUT
                | M::IBV_QP_RETRY_CNT
                | M::IBV_QP_RNR_RETRY
                | M::IBV_QP_MAX_QP_RD_ATOMIC;
        }
        self.modify(&rts, mask)?;
        Ok(depth)
    }

    /// A UD QP's Q_Key (the RDMA CM's, instead of libhrd's default): the key datagrams sent to
    /// it must carry.
    pub fn set_qkey(&mut self, qkey: u32) -> Result<()> {
        if self.qp_type != QpType::Ud {
            return Err(Error::config("only UD QPs have a Q_Key"));
        }
        self.modify(
            &sys::ibv_qp_attr {
                qkey,
                ..Default::default()
            },
            M::IBV_QP_QKEY,
        )
    }

    /// What a peer needs to reach this QP, exposing `mr` (or no memory).
    pub fn info(&self, mr: Option<&MemoryRegion>) -> QpInfo {
        QpInfo {
            qpn: self.qp_num(),
            psn: defaults::PSN,
            lid: self.port.attr().lid,
            gid: self.port.gid().0,
            buf_addr: mr.map_or(0, |m| m.addr() as u64),
            buf_size: mr.map_or(0, |m| m.len() as u64),
            rkey: mr.map_or(0, |m| m.rkey()),
            mtu: self.port.attr().active_mtu,
            // What `connect` sets as responder: the peer initiates no more than that.
            rd_atomic: match self.qp_type {
                QpType::Rc => self
                    .port
                    .context()
                    .max_qp_rd_atom()
                    .map_or(0, |n| clamp_u8(n).min(defaults::MAX_RD_ATOMIC)),
                QpType::Uc | QpType::Ud => 0,
            },
        }
    }

    /// QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: `raw` is a live QP.
        unsafe { self.raw.as_ref().qp_num }
    }
    /// Transport.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }
    /// Granted queue sizes and inline limit.
    pub fn caps(&self) -> QpCaps {
        self.caps
    }
    /// The port it lives on.
    pub fn port(&self) -> &Port {
        &self.port
    }
    /// Its send CQ.
    pub fn send_cq(&self) -> &Arc<CompletionQueue> {
        &self.send_cq
    }
    /// Its receive CQ.
    pub fn recv_cq(&self) -> &Arc<CompletionQueue> {
        &self.recv_cq
    }
    /// The raw `ibv_qp`. Posting through it bypasses the keep-alive rule: the caller must keep
    /// every region and AH its WRs reference alive until they complete.
    pub fn as_raw(&self) -> *mut sys::ibv_qp {
        self.raw.as_ptr()
    }
    /// The protection domain.
    pub fn pd(&self) -> &Arc<ProtectionDomain> {
        &self.pd
    }
}

impl Drop for QueuePair {
    fn drop(&mut self) {
        #[cfg(has_wr_api)]
        if self.send_key == 0 && !self.ex.is_null() {
            // SAFETY: a leaked WrGuard left a batch open on this live qp_ex: close it so that the
            // provider's send-queue lock is released before the QP goes.
            unsafe { sys::shim_wr_abort(self.ex) };
        }
        self.detach_groups();
        // SAFETY: `raw` is a live QP; its CQs, PD, and every region and AH its WRs referenced are
        // kept alive by our Arcs until after this call, which ends all of its WRs.
        unsafe { sys::ibv_destroy_qp(self.raw.as_ptr()) };
    }
}

/// The provider casts the CQs to its own types: they must come from the PD's device context.
fn same_device(
    pd: &ProtectionDomain,
    port: &Port,
    send_cq: &CompletionQueue,
    recv_cq: &CompletionQueue,
) -> Result<()> {
    let ctx = pd.context();
    let same = |c: &Arc<super::Context>| Arc::ptr_eq(c, ctx);
    if !(same(send_cq.context()) && same(recv_cq.context()) && same(port.context())) {
        return Err(Error::config(
            "the QP's CQs, port and PD must belong to the same opened device",
        ));
    }
    Ok(())
}

fn raw_caps(c: QpCaps) -> sys::ibv_qp_cap {
    sys::ibv_qp_cap {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline_data: c.max_inline_data,
    }
}
