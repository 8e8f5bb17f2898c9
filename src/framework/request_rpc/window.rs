//! A client's closed loop: `window` requests out, one new request per reply.

use crate::error::Result;
use crate::framework::ud_rpc::{drain_timeout, settle, UdRpc};
use crate::framework::Meter;
use crate::verbs::WorkCompletion;

/// What a benchmark's client does in the loop.
pub trait WindowClient {
    /// Posts one more request; `false` when it cannot go yet (HERD: its slot's previous reply,
    /// overtaken by a later one, is still on its way), to be retried after the next reply.
    fn send(&mut self) -> Result<bool>;
    /// Takes one reply (already checked to be a successful completion).
    fn take(&mut self, rpc: &UdRpc, wc: &WorkCompletion) -> Result<()>;
}

/// Keeps `window` requests out over `rpc`, sending one more per reply, until the run stops or
/// `limit` replies were measured, then closes the window and waits for the replies to the last
/// requests. Returns the replies measured, or `None` when the last replies did not come because
/// the run was stopped by a signal (the client should then just leave).
pub fn run_window(
    rpc: &mut UdRpc,
    client: &mut impl WindowClient,
    window: usize,
    limit: u64,
    m: &mut Meter<'_>,
    me: &str,
) -> Result<Option<u64>> {
    // Requests we may send but have not: the window is `window` minus these.
    let mut owed = window;
    while owed > 0 && client.send()? {
        owed -= 1;
    }
    m.start();
    let mut wcs = vec![WorkCompletion::default(); window];
    let mut ops = 0u64;
    while m.checkpoint() && ops < limit {
        let n = rpc.recv_cq.poll(&mut wcs)?;
        if n == 0 {
            continue;
        }
        for wc in &wcs[..n] {
            wc.result()?;
            client.take(rpc, wc)?;
        }
        rpc.repost(&wcs[..n])?;
        owed += n;
        while owed > 0 && client.send()? {
            owed -= 1;
        }
        ops += n as u64;
        m.count(ops);
    }
    m.stop();
    let attention = m.attention();
    let drained = rpc.drain_replies(window - owed, drain_timeout(attention), |rpc, wc| {
        client.take(rpc, wc)
    });
    Ok(settle(drained, me, attention)?.then_some(ops))
}
