//! Replies over several UD QPs (the paper's servers answer through `NUM_UD_QPS` of them, one
//! doorbell per batch, rotating QPs between batches): one WR array, a linked postlist of the
//! replies staged since the last doorbell, selective signaling per QP, and a table of
//! destinations (address handles) that every QP keeps alive.

use std::sync::Arc;

use super::poll::PollTimeout;
use super::raw::RawArray;
use super::signal::UnsignaledCounter;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{AddressHandle, MemoryRegion, QpType, QueuePair, WorkCompletion};
use sys::ibv_send_flags as F;

/// A destination in a [`UdPostlist`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestId(u32);

/// What a reply carries besides its immediate.
#[derive(Debug, Clone, Copy)]
pub enum Payload<'a> {
    /// Header only: no payload DMA at all (Spec-S0's replies).
    None,
    /// One 8-byte word (a sequencer value).
    U64(u64),
    /// These bytes (an echo).
    Bytes(&'a [u8]),
}

/// How a request's sender is told apart, cheaply, for the AH cache: the source LID on
/// InfiniBand; on RoCE the source address in the 40 bytes before the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Lid,
    /// RoCE v2 over IPv4: the IPv4 header fills bytes 20..40; source and destination address
    /// are bytes 32..40 (one word; the destination is us, so the word names the sender).
    Ipv4,
    /// A real GRH: the source GID is bytes 8..24.
    Gid,
}

/// Most destinations one table holds (the original provisions 70 clients).
const MAX_DESTS: usize = 4096;

/// `qps.len()` UD QPs answering requests: [`push`](Self::push) stages a reply, [`flush`](Self::flush)
/// posts the staged ones as one linked postlist on the next QP in turn. Payloads are inlined from
/// a small region of one slot per WR, so a slot is free again once `flush` returns.
pub struct UdPostlist {
    qps: Vec<QueuePair>,
    /// Each QP's serial when the table was built (a swapped-in QP is refused).
    keys: Vec<u64>,
    counters: Vec<UnsignaledCounter>,
    wrs: RawArray<sys::ibv_send_wr>,
    sges: RawArray<sys::ibv_sge>,
    mr: Arc<MemoryRegion>,
    /// Distance between payload slots.
    slot_bytes: usize,
    /// Largest payload (at most the QPs' inline limit).
    max_payload: usize,
    /// (source key — `None` for destinations added by hand, never matched —, raw AH) per
    /// destination; `ahs` holds the same AHs (every QP keeps them too).
    dests: Vec<(Option<u128>, *mut sys::ibv_ah)>,
    ahs: Vec<Arc<AddressHandle>>,
    source: Source,
    staged: usize,
    next_qp: usize,
    timeout: PollTimeout,
    /// A post failed: the signaling count no longer matches the queue.
    poisoned: bool,
    doorbells: u64,
    replies: u64,
}

// SAFETY: the raw AH pointers are owned by `ahs` (and the QPs); the table moves between threads
// as a whole and is used through `&mut` only.
unsafe impl Send for UdPostlist {}

impl UdPostlist {
    /// A table over `qps` (UD, one PD, at least one), replying from `mr` (slot `i` of the
    /// postlist at `i·slot_bytes`), at most `max_postlist` replies per doorbell, each QP
    /// signaling as `counter` says and reaping within `timeout`.
    pub fn new(
        mut qps: Vec<QueuePair>,
        mr: &Arc<MemoryRegion>,
        max_postlist: usize,
        slot_bytes: usize,
        counter: UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<Self> {
        let bad = |m: String| Err(Error::config(m));
        let Some(first) = qps.first() else {
            return bad("a reply table needs at least one UD QP".into());
        };
        if max_postlist == 0 || max_postlist as u64 > u64::from(counter.unsig_batch()) {
            return bad(format!(
                "reply postlist ({max_postlist}) must be between 1 and unsig_batch ({})",
                counter.unsig_batch()
            ));
        }
        let port = first.port();
        // RoCE v2 over IPv4 puts an IPv4 header where the GRH would be; RoCE v1 (even with an
        // IPv4-mapped GID) and v2 over IPv6 carry a real GRH.
        let v2 = port
            .context()
            .gid_type(port.num(), port.gid_index())
            .is_some_and(|t| t.contains("v2"));
        let source = if !port.addressed_by_gid() {
            Source::Lid
        } else if v2 && port.gid().ipv4().is_some() {
            Source::Ipv4
        } else {
            Source::Gid
        };
        let port_num = port.num();
        let ctx = Arc::clone(port.context());
        for (i, qp) in qps.iter().enumerate() {
            if qp.qp_type() != QpType::Ud {
                return bad("replies go out over UD QPs only".into());
            }
            // Each QP's counter reaps its own send CQ: a shared CQ would hand one QP's
            // completions to another's count.
            if qps[..i]
                .iter()
                .any(|o| Arc::ptr_eq(o.send_cq(), qp.send_cq()))
            {
                return bad("each UD QP of a postlist needs a send CQ of its own".into());
            }
            if qp.port().num() != port_num || !Arc::ptr_eq(qp.port().context(), &ctx) {
                return bad("the UD QPs of a postlist must share one port".into());
            }
            if u64::from(qp.caps().max_send_wr) < 2 * u64::from(counter.unsig_batch()) {
                return bad(format!(
                    "queue depth ({}) must be at least 2 x unsig_batch ({})",
                    qp.caps().max_send_wr,
                    2 * counter.unsig_batch()
                ));
            }
            if max_postlist as u64 > u64::from(qp.caps().max_send_wr) {
                return bad(format!(
                    "reply postlist {max_postlist} exceeds the send queue depth {}",
                    qp.caps().max_send_wr
                ));
            }
            if slot_bytes > qp.caps().max_inline_data as usize {
                return bad(format!(
                    "replies of {slot_bytes} bytes are above the inline limit of {} bytes",
                    qp.caps().max_inline_data
                ));
            }
        }
        let stride = slot_bytes.max(8).next_multiple_of(8);
        if max_postlist
            .checked_mul(stride)
            .is_none_or(|e| e > mr.len())
        {
            return bad(format!(
                "{max_postlist} reply slots of {slot_bytes} bytes do not fit the {}-byte region",
                mr.len()
            ));
        }
        for qp in &mut qps {
            qp.keep_alive_mr(mr)?;
        }
        let sges = RawArray::new(
            (0..max_postlist)
                .map(|i| sys::ibv_sge {
                    addr: mr.addr() as u64 + (i * stride) as u64,
                    length: 0,
                    lkey: mr.lkey(),
                })
                .collect(),
        );
        let wrs = RawArray::new(
            (0..max_postlist)
                .map(|i| sys::ibv_send_wr {
                    wr_id: i as u64,
                    num_sge: 1,
                    sg_list: sges.at(i),
                    opcode: sys::ibv_wr_opcode::IBV_WR_SEND_WITH_IMM,
                    send_flags: F::IBV_SEND_INLINE.0,
                    ..Default::default()
                })
                .collect(),
        );
        for i in 0..max_postlist - 1 {
            // SAFETY: both entries are in bounds; no reference to the array exists.
            unsafe { (*wrs.at(i)).next = wrs.at(i + 1) };
        }
        Ok(UdPostlist {
            keys: qps.iter().map(QueuePair::serial).collect(),
            counters: vec![counter; qps.len()],
            qps,
            wrs,
            sges,
            mr: Arc::clone(mr),
            slot_bytes: stride,
            max_payload: slot_bytes,
            dests: Vec::new(),
            ahs: Vec::new(),
            source,
            staged: 0,
            next_qp: 0,
            timeout,
            poisoned: false,
            doorbells: 0,
            replies: 0,
        })
    }

    /// The QPs (QP 0 is where the paper's servers also receive).
    pub fn qp(&self, i: usize) -> &QueuePair {
        &self.qps[i]
    }
    /// QP `i`, to post receives on.
    pub fn qp_mut(&mut self, i: usize) -> &mut QueuePair {
        &mut self.qps[i]
    }
    /// Number of QPs.
    pub fn qp_count(&self) -> usize {
        self.qps.len()
    }
    /// Replies per doorbell so far (the original's "average postlist").
    pub fn average_postlist(&self) -> f64 {
        if self.doorbells == 0 {
            0.0
        } else {
            self.replies as f64 / self.doorbells as f64
        }
    }

    /// Adds a destination known in advance (a client's AH from its registry entry).
    pub fn add_dest(&mut self, ah: &Arc<AddressHandle>) -> Result<DestId> {
        self.insert(None, ah)
    }

    fn insert(&mut self, key: Option<u128>, ah: &Arc<AddressHandle>) -> Result<DestId> {
        // Every AH in the table is kept by every QP the table posts on: refuse while one of its
        // QPs is swapped out (through `qp_mut`), or the swapped-back QP would post an AH it
        // never kept.
        if self
            .qps
            .iter()
            .zip(&self.keys)
            .any(|(q, k)| q.serial() != *k)
        {
            return Err(Error::config(
                "a QP of this postlist was replaced: destinations can no longer be added",
            ));
        }
        if self.dests.len() >= MAX_DESTS {
            return Err(Error::config(format!(
                "more than {MAX_DESTS} distinct reply destinations"
            )));
        }
        for qp in &mut self.qps {
            qp.keep_alive_ah(ah)?;
        }
        self.dests.push((key, ah.as_raw()));
        self.ahs.push(Arc::clone(ah));
        Ok(DestId(self.dests.len() as u32 - 1))
    }

    /// The destination that answers the sender of receive completion `wc`, whose buffer starts
    /// at `grh_off` of `recv` (8-byte aligned): looked up by the sender's address, and made with
    /// `ibv_create_ah_from_wc` the first time that sender is seen.
    #[inline]
    pub fn dest_of(
        &mut self,
        wc: &WorkCompletion,
        recv: &MemoryRegion,
        grh_off: usize,
    ) -> Result<DestId> {
        let key = match self.source {
            Source::Lid => u128::from(wc.slid()),
            Source::Ipv4 => u128::from(recv.load_u64(grh_off + 32)),
            Source::Gid => {
                u128::from(recv.load_u64(grh_off + 8)) << 64
                    | u128::from(recv.load_u64(grh_off + 16))
            }
        };
        if let Some(i) = self.dests.iter().position(|d| d.0 == Some(key)) {
            return Ok(DestId(i as u32));
        }
        self.learn(key, wc, recv, grh_off)
    }

    #[cold]
    fn learn(
        &mut self,
        key: u128,
        wc: &WorkCompletion,
        recv: &MemoryRegion,
        grh_off: usize,
    ) -> Result<DestId> {
        let mut grh = [0u8; 40];
        recv.read(grh_off, &mut grh);
        let qp = &self.qps[0];
        let ah = AddressHandle::reply_to(qp.pd(), qp.port(), wc, &grh)?;
        self.insert(Some(key), &ah)
    }

    /// Stages a reply to (`dest`, `qpn`): SEND_WITH_IMM when `imm` is given, else SEND.
    #[inline(always)]
    pub fn push(
        &mut self,
        dest: DestId,
        qpn: u32,
        imm: Option<u32>,
        payload: Payload<'_>,
    ) -> Result<()> {
        let i = self.staged;
        if i >= self.wrs.len() {
            return Err(Error::protocol(format!(
                "more than {} replies staged before a flush",
                self.wrs.len()
            )));
        }
        let Some(&(_, ah)) = self.dests.get(dest.0 as usize) else {
            return Err(Error::protocol("unknown reply destination"));
        };
        let off = i * self.slot_bytes;
        let len = match payload {
            Payload::None => 0,
            Payload::U64(v) => {
                if self.max_payload < 8 {
                    return Err(Error::config("this postlist carries no 8-byte payloads"));
                }
                self.mr.store_u64(off, v);
                8
            }
            Payload::Bytes(b) => {
                if b.len() > self.max_payload {
                    return Err(Error::config(format!(
                        "a {}-byte payload exceeds the {}-byte limit of this postlist",
                        b.len(),
                        self.max_payload
                    )));
                }
                self.mr.write(off, b);
                b.len() as u32
            }
        };
        let (opcode, imm) = match imm {
            Some(v) => (sys::ibv_wr_opcode::IBV_WR_SEND_WITH_IMM, v.to_be()),
            None => (sys::ibv_wr_opcode::IBV_WR_SEND, 0),
        };
        // SAFETY: `i` is below the array's length (checked); the arrays are reached through
        // their base pointers only; the AH is in our table, so every QP keeps it alive.
        unsafe {
            (*self.sges.at_unchecked(i)).length = len;
            let wr = self.wrs.at_unchecked(i);
            (*wr).opcode = opcode;
            *sys::send_wr_imm(wr) = imm;
            (*wr).send_flags = F::IBV_SEND_INLINE.0;
            sys::wr_set_ud(wr, ah, qpn, crate::verbs::defaults::QKEY);
        }
        self.staged = i + 1;
        Ok(())
    }

    /// Replies staged and not yet posted.
    pub fn staged(&self) -> usize {
        self.staged
    }

    /// Posts the staged replies as one linked postlist (one doorbell) on the next QP in turn,
    /// one WR signaled per `unsig_batch` on that QP; returns how many went out.
    #[inline]
    pub fn flush(&mut self) -> Result<usize> {
        let n = self.staged;
        if n == 0 {
            return Ok(0);
        }
        if self.poisoned {
            return Err(Error::protocol(
                "an earlier post of this postlist failed; its signaling count is lost",
            ));
        }
        let q = self.next_qp;
        let qp = &mut self.qps[q];
        if qp.send_key() != self.keys[q] {
            return Err(qp.refusal());
        }
        let counter = &mut self.counters[q];
        counter.check_postlist(n as u32)?;
        let signaled = counter.prepare_checked(n as u32, qp.send_cq(), self.timeout)?;
        // SAFETY: n ≥ 1 and n ≤ len (push never stages more); the chain is cut after WR n−1 for
        // this call and restored after it; every SGE lies in `mr`, which every QP keeps alive,
        // and every AH in the chain is in the table the QPs keep alive; the QP is the one the
        // table was built with (checked above).
        let r = unsafe {
            if let Some(s) = signaled {
                (*self.wrs.at_unchecked((s as usize).min(n - 1))).send_flags |=
                    F::IBV_SEND_SIGNALED.0;
            }
            let last = self.wrs.at_unchecked(n - 1);
            let saved = std::mem::replace(&mut (*last).next, std::ptr::null_mut());
            let r = qp.post_send_chain(self.wrs.head());
            (*last).next = saved;
            r
        };
        if let Err(e) = r {
            self.poisoned = true;
            return Err(e);
        }
        self.staged = 0;
        self.next_qp = if q + 1 == self.qps.len() { 0 } else { q + 1 };
        self.doorbells += 1;
        self.replies += n as u64;
        Ok(n)
    }

    /// Reaps every signaled reply still out, on every QP (at the end of a run).
    pub fn drain(&mut self) -> Result<()> {
        for (qp, c) in self.qps.iter().zip(self.counters.iter_mut()) {
            c.drain(qp.send_cq(), self.timeout)?;
        }
        Ok(())
    }
}
