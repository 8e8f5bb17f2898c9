//! Pre-built receive work requests, reposted in batches with one `ibv_post_recv`.

use std::sync::Arc;

use super::raw::RawArray;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{MemoryRegion, QueuePair, SharedReceiveQueue, WorkCompletion};

/// Where a [`RecvBatch`] posts.
enum Target {
    /// The receive queue of the QP with this serial.
    Qp(u64),
    /// A shared receive queue.
    Srq(Arc<SharedReceiveQueue>),
}

/// `n` linked receive WRs for one QP, or for an SRQ; slot `i` receives into
/// `offset + i·stride` of the region, `len` bytes. The QP (or SRQ) keeps the region alive while
/// RECVs are posted.
pub struct RecvBatch {
    wrs: RawArray<sys::ibv_recv_wr>,
    _sges: RawArray<sys::ibv_sge>,
    target: Target,
}

impl RecvBatch {
    /// Builds `n` receives of `len` bytes each (UD: include the 40-byte GRH in `len`) for
    /// `qp`'s receive queue.
    pub fn new(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        n: usize,
        len: u32,
        offset: usize,
        stride: usize,
    ) -> Result<Self> {
        check_fits(mr, n, len, offset, stride)?;
        qp.keep_alive_mr(mr)?;
        Ok(Self::build(
            mr,
            n,
            len,
            offset,
            stride,
            Target::Qp(qp.serial()),
        ))
    }

    /// As [`RecvBatch::new`], for the shared receive queue `srq`: every QP made with it
    /// consumes these RECVs.
    pub fn for_srq(
        srq: &Arc<SharedReceiveQueue>,
        mr: &Arc<MemoryRegion>,
        n: usize,
        len: u32,
        offset: usize,
        stride: usize,
    ) -> Result<Self> {
        check_fits(mr, n, len, offset, stride)?;
        srq.keep_alive_mr(mr)?;
        Ok(Self::build(
            mr,
            n,
            len,
            offset,
            stride,
            Target::Srq(Arc::clone(srq)),
        ))
    }

    fn build(
        mr: &MemoryRegion,
        n: usize,
        len: u32,
        offset: usize,
        stride: usize,
        target: Target,
    ) -> Self {
        let sges = RawArray::new(
            (0..n)
                .map(|i| sys::ibv_sge {
                    addr: mr.addr() as u64 + (offset + i * stride) as u64,
                    length: len,
                    lkey: mr.lkey(),
                })
                .collect(),
        );
        let wrs = RawArray::new(
            (0..n)
                .map(|i| sys::ibv_recv_wr {
                    wr_id: i as u64,
                    next: std::ptr::null_mut(),
                    sg_list: sges.at(i),
                    num_sge: 1,
                })
                .collect(),
        );
        for i in 0..n - 1 {
            // SAFETY: both entries are in bounds; no reference to the array exists.
            unsafe { (*wrs.at(i)).next = wrs.at(i + 1) };
        }
        RecvBatch {
            wrs,
            _sges: sges,
            target,
        }
    }

    /// Gives every WR the same `wr_id` (by default slot `i` carries `i`), e.g. the index of the
    /// QP whose buffer it fills, which an SRQ's completion does not otherwise tell.
    pub fn set_wr_id(&mut self, id: u64) {
        for i in 0..self.wrs.len() {
            // SAFETY: in bounds; nothing is posted while `&mut self` is held here.
            unsafe { (*self.wrs.at(i)).wr_id = id };
        }
    }

    /// Number of WRs.
    pub fn len(&self) -> usize {
        self.wrs.len()
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.wrs.len() == 0
    }

    /// Posts the first `n` WRs (all when `n` ≥ len) with one `ibv_post_recv` on the QP the
    /// batch was built for, or one `ibv_post_srq_recv` on its SRQ (`qp` is then not used).
    #[inline(always)]
    pub fn post(&mut self, qp: &mut QueuePair, n: usize) -> Result<()> {
        if let Target::Qp(serial) = self.target {
            if qp.serial() != serial {
                return Err(Error::config("this batch was built for another QP"));
            }
        }
        let n = n.min(self.wrs.len());
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `n - 1` is in bounds; the chain is cut after it for this call and restored
        // after; every SGE lies in the region this batch's QP or SRQ keeps alive, and the SRQ
        // (not `Sync`) is posted to from this thread only.
        unsafe {
            let last = self.wrs.at_unchecked(n - 1);
            let saved = std::mem::replace(&mut (*last).next, std::ptr::null_mut());
            let r = match &self.target {
                Target::Qp(_) => qp.post_recv_chain(self.wrs.head()),
                Target::Srq(srq) => srq.post_recv_chain(self.wrs.head()),
            };
            (*last).next = saved;
            r
        }
    }
}

/// Refuses a batch that is empty or would reach past the region.
fn check_fits(mr: &MemoryRegion, n: usize, len: u32, offset: usize, stride: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::config("a receive batch needs at least one WR"));
    }
    // Checked: a wrapped end would pass the bounds test.
    let end = (n - 1)
        .checked_mul(stride)
        .and_then(|e| e.checked_add(offset))
        .and_then(|e| e.checked_add(len as usize));
    match end {
        Some(end) if end <= mr.len() => Ok(()),
        _ => Err(Error::config(format!(
            "receive batch of {n} × {len} bytes (stride {stride}, offset {offset}) does not fit the {}-byte MR",
            mr.len()
        ))),
    }
}

/// A ring of `n` receive WRs for one QP, each with its own buffer (slot `i` at
/// `offset + i·stride`, `len` bytes), reposted in order with one `ibv_post_recv` per batch.
///
/// A QP's receive queue completes in posting order, so the `k` RECVs a poll returned are always
/// the `k` oldest: reposting the `k` slots from the ring's head puts exactly those buffers back,
/// and a slot is never posted twice. The WRs are linked in a circle; a repost cuts the circle
/// after its last WR for the call and restores it after. `wr_id` is the slot index.
pub struct RecvRing {
    wrs: RawArray<sys::ibv_recv_wr>,
    _sges: RawArray<sys::ibv_sge>,
    qp_serial: u64,
    /// The next slot to post.
    head: usize,
    /// [`fill`](Self::fill) ran.
    filled: bool,
    offset: usize,
    stride: usize,
}

impl RecvRing {
    /// Builds the ring (nothing is posted yet: [`fill`](Self::fill)).
    pub fn new(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        n: usize,
        len: u32,
        offset: usize,
        stride: usize,
    ) -> Result<Self> {
        if n == 0 {
            return Err(Error::config("a receive ring needs at least one slot"));
        }
        if n as u64 > u64::from(qp.caps().max_recv_wr) {
            return Err(Error::config(format!(
                "a receive ring of {n} slots exceeds the QP's receive queue of {}",
                qp.caps().max_recv_wr
            )));
        }
        if stride < len as usize && n > 1 {
            return Err(Error::config(format!(
                "receive slots of {len} bytes overlap at stride {stride}"
            )));
        }
        // Reuse the batch's bounds check and chain; then close the circle.
        check_fits(mr, n, len, offset, stride)?;
        qp.keep_alive_mr(mr)?;
        let qp_serial = qp.serial();
        let RecvBatch { wrs, _sges, .. } =
            RecvBatch::build(mr, n, len, offset, stride, Target::Qp(qp_serial));
        // SAFETY: both entries are in bounds; no reference to the array exists.
        unsafe { (*wrs.at(n - 1)).next = wrs.at(0) };
        Ok(RecvRing {
            wrs,
            _sges,
            qp_serial,
            head: 0,
            filled: false,
            offset,
            stride,
        })
    }

    /// Slots in the ring.
    pub fn len(&self) -> usize {
        self.wrs.len()
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.wrs.len() == 0
    }

    /// Offset in the region of the slot a completion's `wr_id` names.
    #[inline(always)]
    pub fn slot_offset(&self, wr_id: u64) -> usize {
        self.offset + (wr_id as usize % self.wrs.len()) * self.stride
    }

    /// Posts every slot (once, at the start).
    pub fn fill(&mut self, qp: &mut QueuePair) -> Result<()> {
        if self.filled {
            return Err(Error::protocol("the receive ring is already posted"));
        }
        self.post(qp, self.wrs.len())?;
        self.filled = true;
        Ok(())
    }

    /// Hands the slots of the receive completions `done` back to the QP with one
    /// `ibv_post_recv`. They must be the ring's oldest posted slots, in order (a QP's receive
    /// queue completes in posting order): anything else — a completion of another ring, one
    /// handed back twice — is refused before anything is posted.
    #[inline(always)]
    pub fn repost(&mut self, qp: &mut QueuePair, done: &[WorkCompletion]) -> Result<()> {
        if !self.filled {
            return Err(Error::protocol("the receive ring was never posted (fill)"));
        }
        let n = self.wrs.len();
        let mut want = self.head;
        for wc in done {
            if wc.wr_id() != want as u64 {
                return Err(Error::protocol(format!(
                    "receive completion of slot {} where the ring's oldest slot is {want}",
                    wc.wr_id()
                )));
            }
            want = if want + 1 == n { 0 } else { want + 1 };
        }
        self.post(qp, done.len())
    }

    /// Posts `k` slots from the head with one `ibv_post_recv`.
    #[inline(always)]
    fn post(&mut self, qp: &mut QueuePair, k: usize) -> Result<()> {
        if qp.serial() != self.qp_serial {
            return Err(Error::config("this ring was built for another QP"));
        }
        let n = self.wrs.len();
        if k == 0 {
            return Ok(());
        }
        if k > n {
            return Err(Error::protocol(format!(
                "cannot repost {k} slots of a {n}-slot ring"
            )));
        }
        let last = (self.head + k - 1) % n;
        // SAFETY: `head` and `last` are below n; the circle is cut after `last` for this call
        // and restored after it; every SGE lies in the region this (the ring's) QP keeps alive.
        let r = unsafe {
            let last = self.wrs.at_unchecked(last);
            let saved = std::mem::replace(&mut (*last).next, std::ptr::null_mut());
            let r = qp.post_recv_chain(self.wrs.at_unchecked(self.head));
            (*last).next = saved;
            r
        };
        r?;
        self.head = (self.head + k) % n;
        Ok(())
    }
}
