//! The same postlist as [`super::SendBatch`], posted through the extended `ibv_wr_start …
//! ibv_wr_complete` API: the provider builds WQEs straight from the per-WR calls, with no
//! `ibv_send_wr` in between. Which path is cheaper depends on the provider: measure.

use super::poll::PollTimeout;
use super::send::{Op, Remote, SendSpec};
use super::signal::UnsignaledCounter;
use crate::error::{Error, Result};
use crate::verbs::{MemoryRegion, QueuePair, QueuePairEx};

/// A postlist posted with one `ibv_wr_complete` (one doorbell).
pub struct WrBatch<'a> {
    ex: QueuePairEx<'a>,
    qp: &'a QueuePair,
    op: Op,
    inline: bool,
    size: u32,
    lkey: u32,
    rkey: u32,
    /// (local address, remote address) per slot.
    slots: Box<[(u64, u64)]>,
}

impl<'a> WrBatch<'a> {
    /// Builds a batch of READs or WRITEs on a QP made with [`QueuePair::new_ex`]; slot `i` uses
    /// the same offsets as in a [`super::SendBatch`] of the same spec.
    pub fn new(
        qp: &'a QueuePair,
        mr: &'a MemoryRegion,
        spec: SendSpec,
        remote: Remote,
    ) -> Result<Self> {
        let ex = qp.ex().ok_or_else(|| {
            Error::config("the ibv_wr_* path needs a QP made with QueuePair::new_ex")
        })?;
        if !matches!(spec.op, Op::Write | Op::Read) {
            return Err(Error::config("WrBatch posts READs and WRITEs only"));
        }
        // The same checks as the classic batch: build one and drop it.
        drop(super::SendBatch::new(qp, mr, spec, Some(remote))?);
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
            ex,
            qp,
            op: spec.op,
            inline: spec.inline,
            size: spec.size,
            lkey: mr.lkey(),
            rkey: remote.rkey,
            slots,
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

    /// Posts the batch with selective signaling, as [`super::SendBatch::post_selective`].
    /// Completions due are reaped before the batch is opened.
    #[inline(always)]
    pub fn post_selective(
        &mut self,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()> {
        let first = counter.posted();
        let signaled = counter.prepare(self.slots.len() as u32, self.qp.send_cq(), timeout)?;
        let signal_at = signaled.map_or(usize::MAX, |i| i as usize);
        let ex = &self.ex;
        ex.start();
        for (i, &(local, remote)) in self.slots.iter().enumerate() {
            ex.set_wr(first + i as u64, i == signal_at, self.inline);
            match self.op {
                Op::Read => ex.rdma_read(self.rkey, remote),
                _ => ex.rdma_write(self.rkey, remote),
            }
            if self.inline {
                // SAFETY: `local` lies in the MR this batch borrows (checked at build); the
                // provider copies inline data before returning.
                ex.set_inline_data(unsafe {
                    std::slice::from_raw_parts(local as *const u8, self.size as usize)
                });
            } else {
                // SAFETY: `local..local+size` lies in the MR this batch borrows for 'a.
                unsafe { ex.set_sge(self.lkey, local, self.size) };
            }
        }
        ex.complete()
    }
}
