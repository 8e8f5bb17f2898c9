//! The zero-copy hot loop: work requests built once, doorbell batching (a postlist of linked WRs
//! posted with one `ibv_post_send`), selective signaling, and busy polling. Nothing here allocates
//! once built; each iteration touches only the fields that change.
//!
//! # Soundness rules of this layer
//! - **A batch belongs to one QP.** Building it hands its region (and a UD batch's AHs) to that
//!   QP, which keeps them alive until `ibv_destroy_qp`; posting takes the QP by `&mut` and checks
//!   its serial, so memory a posted WR (signaled or not) may still touch is never freed early, and
//!   no two threads post on one QP.
//! - **Pointer provenance.** WR and SGE arrays live in a `RawArray` (`hot/raw.rs`): leaked from a `Box`
//!   once, reached only through pointers derived from that one base pointer (the `next` and
//!   `sg_list` links the C side follows included), and never through a new `&mut` to the array
//!   after the chain is linked. `Drop` turns it back into a `Box`.
//! - **Checked counters.** Every count that gates reaping or queue occupancy
//!   ([`UnsignaledCounter`]) is checked in all builds: a broken invariant is an error, not a wrap.

mod poll;
mod raw;
mod recv;
mod reply;
mod request;
mod send;
mod signal;
#[cfg(has_wr_api)]
mod wr_batch;

pub use crate::verbs::Op;
pub use poll::{poll_exact, poll_one, PollTimeout, Stall, WaitClock};
pub use recv::{RecvBatch, RecvRing};
pub use reply::{DestId, Payload, UdPostlist};
pub use request::{RequestRegion, SlotLayout};
pub use send::{slot_stride, Remote, SendBatch, SendSpec};
pub use signal::{check_batching, BatchSlot, Moderation, Reap, UnsignaledCounter};
#[cfg(has_wr_api)]
pub use wr_batch::WrBatch;

use crate::error::Result;
use crate::stats::Tally;
use crate::verbs::QueuePair;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SendBatch {}
    #[cfg(has_wr_api)]
    impl Sealed for super::WrBatch {}
}

/// A prebuilt postlist that can be posted with selective signaling, through either post path.
pub trait Postlist: sealed::Sealed {
    /// WRs per post.
    fn len(&self) -> usize;
    /// Never true for a built batch.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Posts the whole postlist (one doorbell) on its QP, signaling as `counter` says and reaping
    /// send completions first when its policy says so. Needs `len()` ≤ the counter's unsig_batch
    /// (at most one signaled WR per postlist); costs O(1) per postlist.
    #[inline(always)]
    fn post_selective(
        &mut self,
        qp: &mut QueuePair,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()> {
        self.check_qp(qp)?;
        counter.check_postlist(self.len() as u32)?;
        // SAFETY: both checks passed just above.
        unsafe { self.post_selective_unchecked(qp, counter, timeout) }
    }
    #[doc(hidden)]
    fn check_qp(&self, qp: &QueuePair) -> Result<()>;
    /// Posts the whole postlist `times` times over, no WR signaled.
    ///
    /// # Safety
    /// `qp` passed [`check_qp`](Self::check_qp).
    #[doc(hidden)]
    unsafe fn post_unsignaled(&mut self, qp: &mut QueuePair, times: u64) -> Result<()>;
    /// [`post_selective`](Self::post_selective) without the QP and postlist checks.
    ///
    /// # Safety
    /// `qp` passed [`check_qp`](Self::check_qp), and `counter.check_postlist(self.len())` passed.
    #[doc(hidden)]
    unsafe fn post_selective_unchecked(
        &mut self,
        qp: &mut QueuePair,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()>;
}

impl Postlist for SendBatch {
    fn len(&self) -> usize {
        SendBatch::len(self)
    }
    #[inline(always)]
    fn check_qp(&self, qp: &QueuePair) -> Result<()> {
        SendBatch::check_qp(self, qp)
    }
    #[inline(always)]
    unsafe fn post_unsignaled(&mut self, qp: &mut QueuePair, times: u64) -> Result<()> {
        if times == 0 {
            return Ok(());
        }
        self.clear_signaled();
        for _ in 0..times {
            // SAFETY: forwarded: the caller checked the QP.
            unsafe { self.post_unchecked(qp)? };
        }
        Ok(())
    }
    #[inline(always)]
    unsafe fn post_selective_unchecked(
        &mut self,
        qp: &mut QueuePair,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()> {
        // SAFETY: forwarded: the caller checked the QP and the postlist.
        unsafe { SendBatch::post_selective_unchecked(self, qp, counter, timeout) }
    }
}

#[cfg(has_wr_api)]
impl Postlist for WrBatch {
    fn len(&self) -> usize {
        WrBatch::len(self)
    }
    #[inline(always)]
    fn check_qp(&self, qp: &QueuePair) -> Result<()> {
        WrBatch::check_qp(self, qp)
    }
    #[inline(always)]
    unsafe fn post_unsignaled(&mut self, qp: &mut QueuePair, times: u64) -> Result<()> {
        for _ in 0..times {
            // SAFETY: forwarded: the caller checked the QP; usize::MAX signals no WR.
            unsafe { self.post_unchecked(qp, 0, usize::MAX)? };
        }
        Ok(())
    }
    #[inline(always)]
    unsafe fn post_selective_unchecked(
        &mut self,
        qp: &mut QueuePair,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> Result<()> {
        // SAFETY: forwarded: the caller checked the QP and the postlist.
        unsafe { WrBatch::post_selective_unchecked(self, qp, counter, timeout) }
    }
}

/// The throughput loop of every selectively-signaled sender: posts `batch` on `qp`, from `ops`
/// operations posted so far, until `limit` operations are posted (rounded up to whole
/// postlists) or the run's attention ([`PollTimeout::attention`]) is raised, publishing the
/// count to `tally`; returns the new count. The caller looks at what the attention is for (a
/// stop, or a report tick: `framework::Meter::checkpoint`) and calls again to go on.
/// Completions still out are left to [`UnsignaledCounter::drain`].
///
/// The loop runs in stretches. The postlists before the next signaled WR need no decision, so
/// they are posted back to back (one `ibv_post_send` and one compare each); then one postlist is
/// posted through [`Postlist::post_selective`], which signals and reaps exactly as `counter`'s rule
/// says; then the count is published and the attention looked at, once per stretch.
#[inline(always)]
pub fn pump<P: Postlist>(
    qp: &mut QueuePair,
    batch: &mut P,
    counter: &mut UnsignaledCounter,
    mut ops: u64,
    limit: u64,
    timeout: PollTimeout,
    tally: Tally<'_>,
) -> Result<u64> {
    batch.check_qp(qp)?;
    let n = batch.len() as u32;
    counter.check_postlist(n)?;
    let per = u64::from(n);
    while ops < limit {
        // At postlist = unsig_batch every postlist is signaled: no stretch, no arithmetic.
        if counter.unsignaled_ahead() >= n {
            let room = (limit - ops).div_ceil(per);
            let free = u64::from(counter.unsignaled_postlists(n)).min(room);
            // SAFETY: the QP passed check_qp above.
            unsafe { batch.post_unsignaled(qp, free)? };
            counter.skip_unsignaled(free as u32 * n)?;
            ops += free * per;
            if ops >= limit {
                break;
            }
        }
        // SAFETY: the QP passed check_qp and the postlist check_postlist above.
        unsafe { batch.post_selective_unchecked(qp, counter, timeout)? };
        ops += per;
        tally.set(ops);
        if timeout.attention.is_raised() {
            break;
        }
    }
    tally.set(ops);
    Ok(ops)
}

/// Bytes of the Global Routing Header at the start of every UD receive buffer.
pub const GRH_BYTES: usize = 40;
