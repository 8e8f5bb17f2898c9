//! The zero-copy hot loop: work requests built once, doorbell batching (a postlist of linked WRs
//! posted with one `ibv_post_send`), selective signaling, and busy polling. Nothing here allocates
//! once built; each iteration touches only the fields that change.

mod poll;
mod recv;
mod send;
mod signal;
mod stop;
mod wr_batch;

pub use poll::{poll_exact, poll_one, PollTimeout};
pub use recv::RecvBatch;
pub use send::{Op, Remote, SendBatch, SendSpec};
pub use signal::{check_batching, BatchSlot, Reap, UnsignaledCounter};
pub use stop::{install_stop_signals, request_stop, stop_requested, Ticker};
pub use wr_batch::WrBatch;

/// A prebuilt postlist that can be posted with selective signaling, through either post path.
pub trait Postlist {
    /// WRs per post.
    fn len(&self) -> usize;
    /// Never true for a built batch.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Posts the whole postlist (one doorbell), signaling as `counter` says and reaping send
    /// completions first when its policy says so.
    fn post_selective(
        &mut self,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> crate::Result<()>;
}

impl Postlist for SendBatch<'_> {
    fn len(&self) -> usize {
        SendBatch::len(self)
    }
    #[inline(always)]
    fn post_selective(
        &mut self,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> crate::Result<()> {
        SendBatch::post_selective(self, counter, timeout)
    }
}

impl Postlist for WrBatch<'_> {
    fn len(&self) -> usize {
        WrBatch::len(self)
    }
    #[inline(always)]
    fn post_selective(
        &mut self,
        counter: &mut UnsignaledCounter,
        timeout: PollTimeout,
    ) -> crate::Result<()> {
        WrBatch::post_selective(self, counter, timeout)
    }
}

/// Bytes of the Global Routing Header at the start of every UD receive buffer.
pub const GRH_BYTES: usize = 40;
