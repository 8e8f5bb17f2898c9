//! Pre-built, linked send work requests posted with one doorbell.

use std::sync::Arc;

use super::poll::PollTimeout;
use super::raw::RawArray;
use super::signal::UnsignaledCounter;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{AddressHandle, MemoryRegion, Op, QpType, QueuePair};
use sys::ibv_send_flags as F;

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

impl Remote {
    /// The buffer a peer exposes in its connection attributes.
    pub fn of(info: &crate::verbs::QpInfo) -> Remote {
        Remote {
            addr: info.buf_addr,
            rkey: info.rkey,
            len: info.buf_size,
        }
    }
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

/// Slot stride of the original: the payload rounded up to a cache line.
pub fn slot_stride(size: u64) -> usize {
    (size.max(1) as usize).div_ceil(64) * 64
}

impl SendSpec {
    /// The paper's slots: `postlist` WRs of `op` and `size` bytes, slot `i` at
    /// `i · round_up(size, 64)` locally and remotely, not inlined.
    pub fn slots(op: Op, postlist: usize, size: u32) -> SendSpec {
        SendSpec {
            op,
            postlist,
            size,
            stride: slot_stride(u64::from(size)),
            local_offset: 0,
            remote_offset: 0,
            inline: false,
        }
    }
}

/// No WR of the batch is signaled.
const NO_SLOT: u32 = u32::MAX;
/// Flags were set by hand; which WRs are signaled is unknown.
const DIRTY: u32 = u32::MAX - 1;

/// `postlist` linked `ibv_send_wr`s and their SGEs, built once for one QP and posted on it with
/// `&mut` access. Building it hands the local region (and a UD batch's AHs) to the QP, which keeps
/// them alive until it is destroyed: a batch may be dropped, and its region's other owners too,
/// while its WRs are still in flight.
pub struct SendBatch {
    wrs: RawArray<sys::ibv_send_wr>,
    sges: RawArray<sys::ibv_sge>,
    /// The QP's granted inline limit, for [`set_inline`](Self::set_inline).
    max_inline: u32,
    /// The WR `post_selective` left signaled, [`NO_SLOT`], or [`DIRTY`] after `set_signaled`
    /// took over (then every flag is cleared once): one compare per post covers all three.
    signaled_slot: u32,
    qp_serial: u64,
    mr: Arc<MemoryRegion>,
    /// What [`retarget`](Self::retarget) checks against.
    remote: Option<Remote>,
    size: u32,
    qp_type: QpType,
}

impl SendBatch {
    /// Builds a batch for an RC/UC QP.
    pub fn new(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        spec: SendSpec,
        remote: Option<Remote>,
    ) -> Result<Self> {
        validate(qp, mr, &spec, remote.as_ref(), false)?;
        Self::build(qp, mr, spec, remote, None)
    }

    /// Builds a batch of UD SENDs to (`ah`, `remote_qpn`).
    pub fn new_ud(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        spec: SendSpec,
        ah: &Arc<AddressHandle>,
        remote_qpn: u32,
    ) -> Result<Self> {
        validate(qp, mr, &spec, None, true)?;
        qp.keep_alive_ah(ah)?;
        Self::build(qp, mr, spec, None, Some((ah.as_raw(), remote_qpn)))
    }

    fn build(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        spec: SendSpec,
        remote: Option<Remote>,
        ud: Option<(*mut sys::ibv_ah, u32)>,
    ) -> Result<Self> {
        qp.keep_alive_mr(mr)?;
        let n = spec.postlist;
        let sges = RawArray::new(
            (0..n)
                .map(|i| sys::ibv_sge {
                    addr: mr.addr() as u64 + (spec.local_offset + i * spec.stride) as u64,
                    length: spec.size,
                    lkey: mr.lkey(),
                })
                .collect(),
        );
        let base_flags = if spec.inline { F::IBV_SEND_INLINE.0 } else { 0 };
        let wrs = RawArray::new(
            (0..n)
                .map(|i| {
                    let mut wr = template(&spec, base_flags, remote, ud, i);
                    wr.sg_list = sges.at(i);
                    wr
                })
                .collect(),
        );
        // Link the chain through pointers derived from the array's base: one ibv_post_send rings
        // one doorbell for all of it.
        for i in 0..n - 1 {
            // SAFETY: both entries are in bounds; no reference to the array exists.
            unsafe { (*wrs.at(i)).next = wrs.at(i + 1) };
        }
        Ok(SendBatch {
            wrs,
            sges,
            max_inline: qp.caps().max_inline_data,
            signaled_slot: NO_SLOT,
            qp_serial: qp.serial(),
            mr: Arc::clone(mr),
            remote,
            size: spec.size,
            qp_type: qp.qp_type(),
        })
    }

    /// Number of WRs.
    pub fn len(&self) -> usize {
        self.wrs.len()
    }
    /// Never true: a batch has at least one WR.
    pub fn is_empty(&self) -> bool {
        self.wrs.len() == 0
    }

    /// The remote buffer the batch targets, if any.
    pub fn remote(&self) -> Option<Remote> {
        self.remote
    }

    /// Refuses a QP other than the one the batch was built for (whose keep-alive list holds the
    /// batch's region and AHs).
    #[inline(always)]
    pub(crate) fn check_qp(&self, qp: &QueuePair) -> Result<()> {
        if qp.send_key() != self.qp_serial {
            return Err(qp.refusal());
        }
        Ok(())
    }

    /// Marks WR `i` signaled or not.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline(always)]
    pub fn set_signaled(&mut self, i: usize, signaled: bool) {
        let _ = self.wrs.at(i);
        self.signaled_slot = DIRTY;
        // SAFETY: checked just above.
        unsafe { self.put_signaled(i, signaled) };
    }

    /// # Safety
    /// `i < len()`.
    #[inline(always)]
    unsafe fn put_signaled(&mut self, i: usize, signaled: bool) {
        let sig = if signaled { F::IBV_SEND_SIGNALED.0 } else { 0 };
        // SAFETY: in bounds (caller); the array is reached through its base pointer only. The
        // WR's other flags (its own INLINE bit, see `set_inline`) are kept.
        unsafe {
            let wr = self.wrs.at_unchecked(i);
            (*wr).send_flags = ((*wr).send_flags & !F::IBV_SEND_SIGNALED.0) | sig;
        }
    }

    /// Sends WR `i`'s payload inline (copied into the WQE when it is posted) or from the region
    /// (`inline` false), whatever the batch was built with: a chain that mixes inlined WRITEs
    /// with READs (write-flush's WRITE+READ pairs). Refused for a READ or atomic WR (the HCA
    /// writes their local buffer), and for a batch whose size is above the QP's inline limit.
    /// [`retarget`](Self::retarget) refuses to turn an inlined WR into a READ or atomic.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    pub fn set_inline(&mut self, i: usize, inline: bool) -> Result<()> {
        let wr = self.wrs.at(i);
        // SAFETY: in bounds (`at` checked); a plain field read through the array's own pointer.
        let opcode = unsafe { (*wr).opcode };
        if inline {
            let local = [Op::Read, Op::FetchAdd(0), Op::CmpSwap(0, 0)];
            if local.iter().any(|op| op.opcode() == opcode) {
                return Err(Error::config(
                    "READs and atomics cannot be inline (the HCA writes their local buffer)",
                ));
            }
            if self.size > self.max_inline {
                return Err(Error::config(format!(
                    "size {} is above the inline limit of {} bytes for inlined WRs",
                    self.size, self.max_inline
                )));
            }
        }
        // SAFETY: in bounds; a plain field update through the array's own pointer. An inlined
        // WR's payload (at most `max_inline` bytes, checked above) is copied by the provider at
        // post time from its SGE, which lies inside the region like every SGE of the batch.
        unsafe {
            let f = (*wr).send_flags & !F::IBV_SEND_INLINE.0;
            (*wr).send_flags = f | if inline { F::IBV_SEND_INLINE.0 } else { 0 };
        }
        Ok(())
    }

    /// Sets WR `i`'s `wr_id`.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline(always)]
    pub fn set_wr_id(&mut self, i: usize, wr_id: u64) {
        // SAFETY: `at` checks the bounds.
        unsafe { (*self.wrs.at(i)).wr_id = wr_id };
    }

    /// Sends UD WR `i` to (`ah`, `remote_qpn`) instead; `qp` (the batch's) keeps `ah` alive.
    pub fn set_ud_dest(
        &mut self,
        qp: &mut QueuePair,
        i: usize,
        ah: &Arc<AddressHandle>,
        remote_qpn: u32,
    ) -> Result<()> {
        self.check_qp(qp)?;
        if qp.qp_type() != QpType::Ud {
            return Err(Error::config("only UD WRs have a destination"));
        }
        qp.keep_alive_ah(ah)?;
        let wr = self.wrs.at(i);
        // SAFETY: in bounds; a UD batch's WRs use the `ud` member of the union.
        unsafe {
            (*wr).wr.ud.ah = ah.as_raw();
            (*wr).wr.ud.remote_qpn = remote_qpn;
        }
        Ok(())
    }

    /// Sends every UD WR with `qkey` (the peer QP's, when it is not libhrd's default).
    pub fn set_ud_qkey(&mut self, qkey: u32) -> Result<()> {
        if self.qp_type != QpType::Ud {
            return Err(Error::config("only UD WRs carry a Q_Key"));
        }
        for i in 0..self.len() {
            // SAFETY: in bounds; a UD batch's WRs use the `ud` member of the union.
            unsafe { (*self.wrs.at(i)).wr.ud.remote_qkey = qkey };
        }
        Ok(())
    }

    /// Points WR `i`'s SGE at another local address in the batch's region (same length).
    pub fn set_local_addr(&mut self, i: usize, addr: u64) -> Result<()> {
        let sge = self.sges.at(i);
        // SAFETY: in bounds; plain field reads and writes through the array's own pointer.
        unsafe {
            let len = u64::from((*sge).length);
            let start = self.mr.addr() as u64;
            let fits = addr >= start
                && addr
                    .checked_add(len)
                    .is_some_and(|end| end <= start + self.mr.len() as u64);
            if !fits {
                return Err(Error::config(format!(
                    "local address {addr:#x} (+{len}) is outside the MR"
                )));
            }
            (*sge).addr = addr;
        }
        Ok(())
    }

    /// Points WR `i` at `local_offset` of the batch's region and `remote_offset` of its remote
    /// buffer (SENDs: the local one only), keeping its operation and length: perftest's BW loop,
    /// which steps both addresses by a cache line per post. Two bound checks and two stores, as
    /// it runs once per post.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline(always)]
    pub fn move_to(&mut self, i: usize, local_offset: u64, remote_offset: u64) -> Result<()> {
        let wr = self.wrs.at(i);
        let sge = self.sges.at(i);
        // SAFETY: both in bounds (`at` checked); plain field reads and writes through the
        // arrays' own pointers. The new local range ends inside the region and the new remote
        // range inside the peer's buffer (when its length is known), both checked before the
        // stores; `rdma` and `atomic` both begin with `remote_addr`, so either WR kind is
        // retargeted by the one store.
        unsafe {
            let len = u64::from((*sge).length);
            if local_offset
                .checked_add(len)
                .is_none_or(|e| e > self.mr.len() as u64)
            {
                return Err(move_refused(local_offset, remote_offset, len));
            }
            if let Some(r) = self.remote {
                let atomic = (*wr).opcode == Op::FetchAdd(0).opcode()
                    || (*wr).opcode == Op::CmpSwap(0, 0).opcode();
                let remote_addr = r.addr.wrapping_add(remote_offset);
                if remote_offset
                    .checked_add(len)
                    .is_none_or(|e| r.len != 0 && e > r.len)
                    || (atomic && remote_addr % 8 != 0)
                {
                    return Err(move_refused(local_offset, remote_offset, len));
                }
                (*wr).wr.rdma.remote_addr = remote_addr;
            }
            (*sge).addr = self.mr.addr() as u64 + local_offset;
        }
        Ok(())
    }

    /// Points WR `i` at `remote_offset` of the batch's remote buffer with operation `op` (READ,
    /// WRITE or an atomic; atomics move 8 bytes, the others the batch's size): the paper's
    /// clients that pick a random counter or request slot per operation. Checked against the
    /// remote buffer's length, atomic alignment, the transport and the inline flag.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline]
    pub fn retarget(&mut self, i: usize, op: Op, remote_offset: u64) -> Result<()> {
        self.retarget_sized(i, op, remote_offset, self.size)
    }

    /// [`retarget`](Self::retarget) with `len` bytes instead of the batch's size, for requests
    /// whose length varies (HERD's GETs and PUTs): `len` may not exceed the size the batch was
    /// built and checked for (its inline limit included). Atomics move 8 bytes whatever `len`.
    ///
    /// # Panics
    /// If `i` is not below [`len`](Self::len).
    #[inline]
    pub fn retarget_sized(&mut self, i: usize, op: Op, remote_offset: u64, len: u32) -> Result<()> {
        let wr = self.wrs.at(i);
        let Some(r) = self.remote else {
            return Err(Error::config(
                "this batch has no remote buffer to retarget in",
            ));
        };
        // SAFETY: in bounds (`at` checked); a plain field read through the array's own pointer.
        let inlined = unsafe { (*wr).send_flags } & F::IBV_SEND_INLINE.0 != 0;
        if len > self.size {
            return Err(Error::config(format!(
                "{len} bytes exceed the {}-byte size this batch was built for",
                self.size
            )));
        }
        let len = if op.is_atomic() { 8 } else { len };
        let end = remote_offset.checked_add(u64::from(len));
        if !op.is_remote()
            || end.is_none_or(|e| r.len != 0 && e > r.len)
            || (op.is_atomic()
                && (r.addr.wrapping_add(remote_offset) % 8 != 0
                    || self.qp_type != QpType::Rc
                    || self.size < 8))
            || (op.reads_into_local() && inlined)
            || (op.reads_into_local() && self.qp_type != QpType::Rc)
        {
            return Err(retarget_refused(op, remote_offset, len, r.len));
        }
        let Some(remote_addr) = r.addr.checked_add(remote_offset) else {
            return Err(retarget_refused(op, remote_offset, len, r.len));
        };
        // SAFETY: in bounds (`at` checked); the SGE is read through the array's base pointer.
        let sge_addr = unsafe { (*self.sges.at_unchecked(i)).addr };
        // The SGE may have been moved (set_local_addr) while it was shorter: the new length
        // must still end inside the region.
        let region_end = self.mr.addr() as u64 + self.mr.len() as u64;
        if sge_addr
            .checked_add(u64::from(len))
            .is_none_or(|e| e > region_end)
        {
            return Err(Error::config(format!(
                "{len} bytes at local address {sge_addr:#x} run past the MR"
            )));
        }
        // SAFETY: in bounds (`at` checked); the array is reached through its base pointer; the
        // local SGE keeps its address and its new length ends inside the region (checked just
        // above); the remote range was checked above.
        unsafe {
            (*wr).opcode = op.opcode();
            (*self.sges.at_unchecked(i)).length = len;
            match op {
                Op::FetchAdd(add) => sys::wr_set_atomic(wr, remote_addr, add, 0, r.rkey),
                Op::CmpSwap(cmp, swap) => sys::wr_set_atomic(wr, remote_addr, cmp, swap, r.rkey),
                _ => sys::wr_set_rdma(wr, remote_addr, r.rkey),
            }
            if let Op::WriteImm(imm) = op {
                *sys::send_wr_imm(wr) = imm.to_be();
            }
        }
        Ok(())
    }

    /// Posts the whole chain with one `ibv_post_send`.
    #[inline(always)]
    pub fn post(&mut self, qp: &mut QueuePair) -> Result<()> {
        self.check_qp(qp)?;
        // SAFETY: the QP is the batch's own (checked).
        unsafe { self.post_unchecked(qp) }
    }

    /// # Safety
    /// `qp` passed [`check_qp`](Self::check_qp).
    #[inline(always)]
    pub(crate) unsafe fn post_unchecked(&mut self, qp: &mut QueuePair) -> Result<()> {
        // SAFETY: the chain is linked and NULL-terminated; its SGEs lie in the batch's region and
        // its AHs are kept alive by this QP (the caller checked it is the batch's).
        unsafe { qp.post_send_chain(self.wrs.head()) }
    }

    /// Posts WR `i` alone (one doorbell for one WR), as rw-allsig's window does.
    #[inline(always)]
    pub fn post_one(&mut self, qp: &mut QueuePair, i: usize) -> Result<()> {
        self.check_qp(qp)?;
        let wr = self.wrs.at(i);
        // SAFETY: in bounds; the chain is cut after WR `i` for this call and restored after it.
        unsafe {
            let saved = std::mem::replace(&mut (*wr).next, std::ptr::null_mut());
            let r = qp.post_send_chain(wr);
            (*wr).next = saved;
            r
        }
    }

    /// # Safety
    /// `qp` passed [`check_qp`](Self::check_qp), and the counter's
    /// [`check_postlist`](UnsignaledCounter::check_postlist) accepted this batch's length.
    #[inline(always)]
    pub(crate) unsafe fn post_selective_unchecked(
        &mut self,
        qp: &mut QueuePair,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()> {
        let signaled = counter.prepare_checked(self.wrs.len() as u32, qp.send_cq(), timeout)?;
        let want = signaled.unwrap_or(NO_SLOT);
        if want != self.signaled_slot {
            self.move_signal(want);
        }
        // SAFETY: forwarded.
        unsafe { self.post_unchecked(qp) }
    }

    /// Leaves no WR signaled.
    #[inline(always)]
    pub(crate) fn clear_signaled(&mut self) {
        if self.signaled_slot != NO_SLOT {
            self.move_signal(NO_SLOT);
        }
    }

    /// Leaves exactly WR `want` (or none, for [`NO_SLOT`]) signaled.
    #[inline(always)]
    fn move_signal(&mut self, want: u32) {
        // Slots come from the counter, which never names a WR beyond the postlist it was given
        // (`n`); clamping makes that a fact here rather than a promise.
        let last = self.wrs.len() - 1;
        match self.signaled_slot {
            NO_SLOT => {}
            DIRTY => {
                for i in 0..=last {
                    // SAFETY: i ≤ last < len.
                    unsafe { self.put_signaled(i, false) };
                }
            }
            // SAFETY: clamped to last < len.
            old => unsafe { self.put_signaled((old as usize).min(last), false) },
        }
        if want != NO_SLOT {
            // SAFETY: clamped to last < len.
            unsafe { self.put_signaled((want as usize).min(last), true) };
        }
        self.signaled_slot = want;
    }
}

#[cold]
#[inline(never)]
fn move_refused(local: u64, remote: u64, len: u64) -> Error {
    Error::config(format!(
        "cannot move a {len}-byte WR to local offset {local} and remote offset {remote}: out of \
         bounds or misaligned"
    ))
}

#[cold]
#[inline(never)]
fn retarget_refused(op: Op, off: u64, len: u32, remote_len: u64) -> Error {
    Error::config(format!(
        "cannot point {op:?} at remote offset {off} (+{len} bytes) of a {remote_len}-byte buffer \
         (transport, alignment, inline or bounds)"
    ))
}

/// WR `i` of a batch, before its SGE pointer and link are set.
fn template(
    spec: &SendSpec,
    base_flags: u32,
    remote: Option<Remote>,
    ud: Option<(*mut sys::ibv_ah, u32)>,
    i: usize,
) -> sys::ibv_send_wr {
    let mut wr = sys::ibv_send_wr {
        wr_id: i as u64,
        num_sge: 1,
        opcode: spec.op.opcode(),
        send_flags: base_flags,
        ..Default::default()
    };
    let p: *mut sys::ibv_send_wr = &mut wr;
    // SAFETY: `p` is the local WR, live and writable for these calls.
    unsafe {
        if let Op::WriteImm(imm) | Op::SendImm(imm) = spec.op {
            *sys::send_wr_imm(p) = imm.to_be();
        }
        if let Some(r) = remote {
            let remote_addr = r.addr + spec.remote_offset + (i * spec.stride) as u64;
            match spec.op {
                Op::FetchAdd(add) => sys::wr_set_atomic(p, remote_addr, add, 0, r.rkey),
                Op::CmpSwap(cmp, swap) => sys::wr_set_atomic(p, remote_addr, cmp, swap, r.rkey),
                _ => sys::wr_set_rdma(p, remote_addr, r.rkey),
            }
        }
        if let Some((ah, remote_qpn)) = ud {
            sys::wr_set_ud(p, ah, remote_qpn, crate::verbs::defaults::QKEY);
        }
    }
    wr
}

/// The checks both post paths make once, when a batch is built.
pub(crate) fn validate(
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
    s.op.check_transport(qp.qp_type())?;
    if ud != (qp.qp_type() == QpType::Ud) {
        return bad("UD QPs need an address handle; RC/UC QPs must not have one".into());
    }
    if s.op.is_remote() && remote.is_none() {
        return bad("this operation needs a remote buffer (addr, rkey)".into());
    }
    // Checked: a wrapped span would pass the bounds test and point WRs (and the provider's
    // inline copy) outside the region.
    let span = |off: u64| -> Option<u64> {
        ((s.postlist - 1) as u64)
            .checked_mul(s.stride as u64)?
            .checked_add(off)?
            .checked_add(u64::from(s.size))
    };
    match span(s.local_offset as u64) {
        Some(end) if end <= mr.len() as u64 => {}
        end => {
            return bad(format!(
                "batch needs {} local bytes but the MR has {}",
                end.map_or_else(|| "more than 2^64".into(), |e| e.to_string()),
                mr.len()
            ))
        }
    }
    if let Some(r) = remote {
        let end = span(s.remote_offset)
            .filter(|e| r.addr.checked_add(*e).is_some())
            .ok_or_else(|| Error::config("the batch's remote range overflows the address space"))?;
        if r.len != 0 && end > r.len {
            return bad(format!(
                "batch reaches byte {end} of a {}-byte remote buffer",
                r.len
            ));
        }
        if s.op.is_atomic() && !(r.addr + s.remote_offset).is_multiple_of(8) {
            return bad("atomics need an 8-byte aligned remote address".into());
        }
    }
    Ok(())
}
