//! The same postlist as [`super::SendBatch`], posted through the extended `ibv_wr_start …
//! ibv_wr_complete` API: the provider builds WQEs straight from the per-WR calls, with no
//! `ibv_send_wr` in between. Which path is cheaper depends on the provider: measure.

use std::sync::Arc;

use super::poll::PollTimeout;
use super::send::{validate, Remote, SendSpec};
use super::signal::UnsignaledCounter;
use crate::error::{Error, Result};
use crate::verbs::{MemoryRegion, Op, QueuePair};

/// A postlist of READs or WRITEs posted with one `ibv_wr_complete` (one doorbell), on the QP it
/// was built for (which keeps its region alive).
pub struct WrBatch {
    op: Op,
    inline: bool,
    size: u32,
    lkey: u32,
    rkey: u32,
    qp_serial: u64,
    /// (local address, remote address) per slot.
    slots: Box<[(u64, u64)]>,
    /// The region the slots point into (also kept alive by the QP).
    _mr: Arc<MemoryRegion>,
}

impl WrBatch {
    /// Builds a batch of READs or WRITEs on a QP made with [`QueuePair::new_ex`]; slot `i` uses
    /// the same offsets as in a [`super::SendBatch`] of the same spec.
    pub fn new(
        qp: &mut QueuePair,
        mr: &Arc<MemoryRegion>,
        spec: SendSpec,
        remote: Remote,
    ) -> Result<Self> {
        // Opening (and aborting) a batch tells whether the QP has the ibv_wr_* API at all.
        qp.wr_start()?.abort();
        if !matches!(spec.op, Op::Write | Op::Read) {
            return Err(Error::config("WrBatch posts READs and WRITEs only"));
        }
        validate(qp, mr, &spec, Some(&remote), false)?;
        qp.keep_alive_mr(mr)?;
        let slots = (0..spec.postlist)
            .map(|i| {
                let off = (i * spec.stride) as u64;
                (
                    mr.addr() as u64 + spec.local_offset as u64 + off,
                    remote.addr + spec.remote_offset + off,
                )
            })
            .collect();
        Ok(WrBatch {
            op: spec.op,
            inline: spec.inline,
            size: spec.size,
            lkey: mr.lkey(),
            rkey: remote.rkey,
            qp_serial: qp.serial(),
            slots,
            _mr: Arc::clone(mr),
        })
    }

    /// Number of WRs.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    #[inline(always)]
    pub(crate) fn check_qp(&self, qp: &QueuePair) -> Result<()> {
        if qp.send_key() != self.qp_serial {
            return Err(qp.refusal());
        }
        Ok(())
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
        let first = counter.posted();
        let signaled = counter.prepare_checked(self.slots.len() as u32, qp.send_cq(), timeout)?;
        let signal_at = signaled.map_or(usize::MAX, |i| i as usize);
        // SAFETY: forwarded.
        unsafe { self.post_unchecked(qp, first, signal_at) }
    }

    /// Posts every slot, WR `signal_at` signaled (none when out of range), wr_ids from
    /// `first_id`.
    ///
    /// # Safety
    /// `qp` passed [`check_qp`](Self::check_qp).
    #[inline(always)]
    pub(crate) unsafe fn post_unchecked(
        &mut self,
        qp: &mut QueuePair,
        first_id: u64,
        signal_at: usize,
    ) -> Result<()> {
        // One dispatch per postlist; the per-WR loop is compiled once per (operation, data kind).
        // The batch was validated as READ/WRITE on an RC/UC QP (READ only on RC) when built.
        match (self.op, self.inline) {
            // SAFETY: forwarded, and a READ batch is never inline.
            (Op::Read, _) => unsafe { self.post_slots::<true, false>(qp, first_id, signal_at) },
            // SAFETY: forwarded; a WRITE batch, inline.
            (_, true) => unsafe { self.post_slots::<false, true>(qp, first_id, signal_at) },
            // SAFETY: forwarded; a WRITE batch from the region.
            (_, false) => unsafe { self.post_slots::<false, false>(qp, first_id, signal_at) },
        }
    }

    /// # Safety
    /// As [`post_unchecked`](Self::post_unchecked); `READ` and `INLINE` match the batch.
    #[inline(always)]
    unsafe fn post_slots<const READ: bool, const INLINE: bool>(
        &mut self,
        qp: &mut QueuePair,
        first_id: u64,
        signal_at: usize,
    ) -> Result<()> {
        let mut g = qp.wr_start()?;
        let (rkey, lkey, size) = (self.rkey, self.lkey, self.size);
        let mut id = first_id;
        // The one signaled WR splits the postlist in two runs of unsignaled ones: the flags are
        // written at the boundaries, not per WR.
        let sig = signal_at.min(self.slots.len());
        let (before, rest) = self.slots.split_at(sig);
        g.set_rdma_flags::<INLINE>(false);
        for &(local, remote) in before {
            // SAFETY: the QP is the batch's (caller), which keeps the batch's region alive; each
            // slot's `local..local+size` was validated to lie in it; flags are set.
            unsafe { g.push_rdma::<READ, INLINE>(id, rkey, remote, lkey, local, size) };
            id += 1;
        }
        if let Some((&(local, remote), after)) = rest.split_first() {
            g.set_rdma_flags::<INLINE>(true);
            // SAFETY: as above.
            unsafe { g.push_rdma::<READ, INLINE>(id, rkey, remote, lkey, local, size) };
            id += 1;
            g.set_rdma_flags::<INLINE>(false);
            for &(local, remote) in after {
                // SAFETY: as above.
                unsafe { g.push_rdma::<READ, INLINE>(id, rkey, remote, lkey, local, size) };
                id += 1;
            }
        }
        g.complete()
    }
}
