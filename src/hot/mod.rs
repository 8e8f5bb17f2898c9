//! The zero-copy hot loop: work requests built once, doorbell batching (a postlist of linked WRs
//! posted with one `ibv_post_send`), selective signaling, and busy polling. Nothing here allocates
//! once built; each iteration touches only the fields that change.

mod poll;
mod recv;
mod send;
mod signal;
mod stop;

pub use poll::{poll_exact, poll_one, PollTimeout};
pub use recv::RecvBatch;
pub use send::{Op, Remote, SendBatch, SendSpec};
pub use signal::{check_batching, UnsignaledCounter};
pub use stop::{install_stop_signals, request_stop, stop_requested};

/// Bytes of the Global Routing Header at the start of every UD receive buffer.
pub const GRH_BYTES: usize = 40;
