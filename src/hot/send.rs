//! Pre-built, linked send work requests posted with one doorbell.

use std::marker::PhantomData;

use super::poll::PollTimeout;
use super::signal::UnsignaledCounter;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{AddressHandle, MemoryRegion, QpType, QueuePair};
use sys::ibv_send_flags as F;
use sys::ibv_wr_opcode as O;

/// The operation every WR of a batch performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate (host order).
    WriteImm(u32),
    /// RDMA READ into the local buffer.
    Read,
    /// SEND.
    Send,
    /// SEND with immediate (host order).
    SendImm(u32),
    /// 8-byte FETCH_AND_ADD; the old value lands in the local buffer.
    FetchAdd(u64),
    /// 8-byte CMP_AND_SWP (compare, swap); the old value lands in the local buffer.
    CmpSwap(u64, u64),
}

impl Op {
    fn opcode(self) -> u32 {
        match self {
            Op::Write => O::IBV_WR_RDMA_WRITE,
            Op::WriteImm(_) => O::IBV_WR_RDMA_WRITE_WITH_IMM,
            Op::Read => O::IBV_WR_RDMA_READ,
            Op::Send => O::IBV_WR_SEND,
            Op::SendImm(_) => O::IBV_WR_SEND_WITH_IMM,
            Op::FetchAdd(_) => O::IBV_WR_ATOMIC_FETCH_AND_ADD,
            Op::CmpSwap(..) => O::IBV_WR_ATOMIC_CMP_AND_SWP,
        }
    }
    fn is_remote(self) -> bool {
        !matches!(self, Op::Send | Op::SendImm(_))
    }
    fn is_atomic(self) -> bool {
        matches!(self, Op::FetchAdd(_) | Op::CmpSwap(..))
    }
    fn reads_into_local(self) -> bool {
        matches!(self, Op::Read) || self.is_atomic()
    }
}

/// The peer's memory a batch targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remote {
    /// Base address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Bytes the peer exposes there (0: unknown, unchecked).
    pub len: u64,
}

/// Shape of a batch: `postlist` WRs of `size` bytes; slot `i` uses local offset
/// `local_offset + i·stride` and remote offset `remote_offset + i·stride`.
#[derive(Debug, Clone, Copy)]
pub struct SendSpec {
    /// The operation.
    pub op: Op,
    /// WRs per doorbell.
    pub postlist: usize,
    /// Payload bytes per WR.
    pub size: u32,
    /// Distance between slots, locally and remotely.
    pub stride: usize,
    /// First slot's offset in the local MR.
    pub local_offset: usize,
    /// First slot's offset in the remote buffer.
    pub remote_offset: u64,
    /// Send the payload inline (copied into the WQE).
    pub inline: bool,
}

/// No WR of the batch is signaled.
const NO_SLOT: u32 = u32::MAX;
/// Flags were set by hand; which WRs are signaled is unknown.
const DIRTY: u32 = u32::MAX - 1;

/// `postlist` linked `ibv_send_wr`s and their SGEs, built once. Borrowing the QP, the local MR and
/// (for UD) the AH keeps every handle the WRs point to alive while the batch exists.
pub struct SendBatch<'a> {
    wrs: Box<[sys::ibv_send_wr]>,
    sges: Box<[sys::ibv_sge]>,
    base_flags: u32,
    /// The WR `post_selective` left signaled, [`NO_SLOT`], or [`DIRTY`] after `set_signaled`
    /// took over (then every flag is cleared once): one compare per post covers all three.
    signaled_slot: u32,
    mr_start: u64,
    mr_end: u64,
    qp: &'a QueuePair,
    _mr: PhantomData<&'a MemoryRegion>,
    _ah: PhantomData<&'a AddressHandle>,
}

impl<'a> SendBatch<'a> {
    /// Builds a batch for an RC/UC QP.
    pub fn new(
        qp: &'a QueuePair,
        mr: &'a MemoryRegion,
        spec: SendSpec,
        remote: Option<Remote>,
    ) -> Result<Self> {
        Self::build(qp, mr, spec, remote, None)
    }

    /// Builds a batch of UD SENDs to (`ah`, `remote_qpn`).
    pub fn new_ud(
        qp: &'a QueuePair,
        mr: &'a MemoryRegion,
        spec: SendSpec,
        ah: &'a AddressHandle,
        remote_qpn: u32,
    ) -> Result<Self> {
        Self::build(qp, mr, spec, None, Some((ah, remote_qpn)))
    }

    fn build(
        qp: &'a QueuePair,
        mr: &'a MemoryRegion,
        spec: SendSpec,
        remote: Option<Remote>,
        ud: Option<(&'a AddressHandle, u32)>,
    ) -> Result<Self> {
        validate(qp, mr, &spec, remote.as_ref(), ud.is_some())?;
        let n = spec.postlist;
        let mut sges: Box<[sys::ibv_sge]> = (0..n)
            .map(|i| sys::ibv_sge {
                addr: mr.addr() as u64 + (spec.local_offset + i * spec.stride) as u64,
                length: spec.size,
                lkey: mr.lkey(),
            })
            .collect();
        let base_flags = if spec.inline { F::IBV_SEND_INLINE.0 } else { 0 };
        let mut wrs: Box<[sys::ibv_send_wr]> =
            (0..n).map(|_| sys::ibv_send_wr::default()).collect();
        for (i, wr) in wrs.iter_mut().enumerate() {
            wr.wr_id = i as u64;
            wr.sg_list = &mut sges[i];
            wr.num_sge = 1;
            wr.opcode = spec.op.opcode();
            wr.send_flags = base_flags;
            match spec.op {
                Op::WriteImm(imm) | Op::SendImm(imm) => wr.__bindgen_anon_1.imm_data = imm.to_be(),
                _ => {}
            }
            let remote_addr =
                remote.map(|r| r.addr + spec.remote_offset + (i * spec.stride) as u64);
            match (spec.op, remote) {
                (Op::FetchAdd(add), Some(r)) => {
                    wr.wr.atomic = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_2 {
                        remote_addr: remote_addr.unwrap_or(0),
                        compare_add: add,
                        swap: 0,
                        rkey: r.rkey,
                    }
                }
                (Op::CmpSwap(cmp, swap), Some(r)) => {
                    wr.wr.atomic = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_2 {
                        remote_addr: remote_addr.unwrap_or(0),
                        compare_add: cmp,
                        swap,
                        rkey: r.rkey,
                    }
                }
                (_, Some(r)) => {
                    wr.wr.rdma = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
                        remote_addr: remote_addr.unwrap_or(0),
                        rkey: r.rkey,
                    }
                }
                (_, None) => {}
            }
            if let Some((ah, qpn)) = ud {
                wr.wr.ud = sys::ibv_send_wr__bindgen_ty_2__bindgen_ty_3 {
                    ah: ah.as_raw(),
                    remote_qpn: qpn,
                    remote_qkey: crate::verbs::defaults::QKEY,
                };
            }
        }
        // Link the chain: one ibv_post_send rings one doorbell for all of it.
        for i in 0..n - 1 {
            let next: *mut sys::ibv_send_wr = &mut wrs[i + 1];
            wrs[i].next = next;
        }
        // Moving the boxes into the struct does not move their heap contents: the pointers hold.
        let mr_start = mr.addr() as u64;
        Ok(SendBatch {
            wrs,
            sges,
            base_flags,
            signaled_slot: NO_SLOT,
            mr_start,
            mr_end: mr_start + mr.len() as u64,
            qp,
            _mr: PhantomData,
            _ah: PhantomData,
        })
    }

    /// Number of WRs.
    pub fn len(&self) -> usize {
        self.wrs.len()
    }
    /// Never true: a batch has at least one WR.
    pub fn is_empty(&self) -> bool {
        self.wrs.is_empty()
    }

    /// Marks WR `i` signaled or not.
    #[inline(always)]
    pub fn set_signaled(&mut self, i: usize, signaled: bool) {
        self.signaled_slot = DIRTY;
        self.put_signaled(i, signaled);
    }

    #[inline(always)]
    fn put_signaled(&mut self, i: usize, signaled: bool) {
        self.wrs[i].send_flags =
            self.base_flags | if signaled { F::IBV_SEND_SIGNALED.0 } else { 0 };
    }

    /// Sets WR `i`'s `wr_id`.
    #[inline(always)]
    pub fn set_wr_id(&mut self, i: usize, wr_id: u64) {
        self.wrs[i].wr_id = wr_id;
    }

    /// Sends UD WR `i` to (`ah`, `remote_qpn`) instead.
    pub fn set_ud_dest(&mut self, i: usize, ah: &'a AddressHandle, remote_qpn: u32) {
        self.wrs[i].wr.ud.ah = ah.as_raw();
        self.wrs[i].wr.ud.remote_qpn = remote_qpn;
    }

    /// Points WR `i`'s SGE at another local address in the same MR (same length).
    pub fn set_local_addr(&mut self, i: usize, addr: u64) -> Result<()> {
        let len = u64::from(self.sges[i].length);
        if addr < self.mr_start || addr + len > self.mr_end {
            return Err(Error::config(format!(
                "local address {addr:#x} (+{len}) is outside the MR"
            )));
        }
        self.sges[i].addr = addr;
        Ok(())
    }

    /// Posts the whole chain with one `ibv_post_send`.
    #[inline(always)]
    pub fn post(&mut self) -> Result<()> {
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: the WRs, their SGEs, the MR, the AH and the QP are all alive for 'a (borrowed);
        // the chain is NULL-terminated; the provider copies WRs before returning.
        let rc = unsafe { sys::shim_post_send(self.qp.as_raw(), self.wrs.as_mut_ptr(), &mut bad) };
        if rc != 0 {
            return Err(Error::verb("ibv_post_send", rc));
        }
        Ok(())
    }

    /// Posts WR `i` alone (one doorbell for one WR), as rw-allsig's window does.
    #[inline(always)]
    pub fn post_one(&mut self, i: usize) -> Result<()> {
        let saved = std::mem::replace(&mut self.wrs[i].next, std::ptr::null_mut());
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: as in `post`; WR `i` is NULL-terminated for this call.
        let rc = unsafe { sys::shim_post_send(self.qp.as_raw(), &mut self.wrs[i], &mut bad) };
        self.wrs[i].next = saved;
        if rc != 0 {
            return Err(Error::verb("ibv_post_send", rc));
        }
        Ok(())
    }

    /// Posts the chain with selective signaling: WRs are signaled as `counter` says, and send
    /// completions are reaped first when its policy says the queue is full. Needs
    /// `len()` ≤ the counter's unsig_batch (at most one signaled WR per postlist). Costs O(1) per
    /// postlist: only the WR whose signaled flag changes is touched.
    #[inline(always)]
    pub fn post_selective(
        &mut self,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()> {
        let signaled = counter.prepare(self.wrs.len() as u32, self.qp.send_cq(), timeout)?;
        let want = signaled.unwrap_or(NO_SLOT);
        if want != self.signaled_slot {
            self.move_signal(want);
        }
        self.post()
    }

    /// Leaves exactly WR `want` (or none, for [`NO_SLOT`]) signaled.
    #[inline(always)]
    fn move_signal(&mut self, want: u32) {
        match self.signaled_slot {
            NO_SLOT => {}
            DIRTY => {
                for i in 0..self.wrs.len() {
                    self.put_signaled(i, false);
                }
            }
            old => self.put_signaled(old as usize, false),
        }
        if want != NO_SLOT {
            self.put_signaled(want as usize, true);
        }
        self.signaled_slot = want;
    }
}

fn validate(
    qp: &QueuePair,
    mr: &MemoryRegion,
    s: &SendSpec,
    remote: Option<&Remote>,
    ud: bool,
) -> Result<()> {
    let bad = |m: String| Err(Error::config(m));
    if s.postlist == 0 {
        return bad("postlist must be at least 1".into());
    }
    if s.postlist as u64 > u64::from(qp.caps().max_send_wr) {
        return bad(format!(
            "postlist {} exceeds the send queue depth {}",
            s.postlist,
            qp.caps().max_send_wr
        ));
    }
    if s.inline && s.size > qp.caps().max_inline_data {
        return bad(format!(
            "size {} is above the inline limit of {} bytes for inlined WRs",
            s.size,
            qp.caps().max_inline_data
        ));
    }
    if s.inline && s.op.reads_into_local() {
        return bad("READs and atomics cannot be inline".into());
    }
    if s.op.is_atomic() && s.size != 8 {
        return bad(format!("atomics move exactly 8 bytes, not {}", s.size));
    }
    match qp.qp_type() {
        QpType::Ud if !matches!(s.op, Op::Send | Op::SendImm(_)) => {
            return bad("UD QPs only SEND".into())
        }
        QpType::Uc if s.op.reads_into_local() => {
            return bad("UC QPs cannot READ or run atomics".into())
        }
        _ => {}
    }
    if ud != (qp.qp_type() == QpType::Ud) {
        return bad("UD QPs need an address handle; RC/UC QPs must not have one".into());
    }
    if s.op.is_remote() && remote.is_none() {
        return bad("this operation needs a remote buffer (addr, rkey)".into());
    }
    let span = |off: u64| off + ((s.postlist - 1) * s.stride) as u64 + u64::from(s.size);
    if span(s.local_offset as u64) > mr.len() as u64 {
        return bad(format!(
            "batch needs {} local bytes but the MR has {}",
            span(s.local_offset as u64),
            mr.len()
        ));
    }
    if let Some(r) = remote {
        if r.len != 0 && span(s.remote_offset) > r.len {
            return bad(format!(
                "batch reaches byte {} of a {}-byte remote buffer",
                span(s.remote_offset),
                r.len
            ));
        }
        if s.op.is_atomic() && (r.addr + s.remote_offset) % 8 != 0 {
            return bad("atomics need an 8-byte aligned remote address".into());
        }
    }
    Ok(())
}
