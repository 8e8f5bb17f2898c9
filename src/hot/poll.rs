//! Busy polling with a bound: a lost completion becomes an error, never a silent hang.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::verbs::{CompletionQueue, WorkCompletion};

/// How long a poll may spin before giving up. The clock is read only once per 64 Ki empty polls,
/// so the bound costs nothing while completions flow.
#[derive(Debug, Clone, Copy)]
pub struct PollTimeout(pub Duration);

impl Default for PollTimeout {
    /// 10 s: far above any RC retry cycle (timeout 14 × retry 7 ≈ 0.5 s).
    fn default() -> Self {
        PollTimeout(Duration::from_secs(10))
    }
}

/// Spins until one completion arrives; error completions become [`Error::Completion`].
#[inline]
pub fn poll_one(cq: &CompletionQueue, timeout: PollTimeout) -> Result<WorkCompletion> {
    let mut wc = [WorkCompletion::default()];
    // Selective signaling polls when the completion is usually there already: try once before
    // setting up the bounded spin.
    if cq.poll(&mut wc)? == 0 {
        poll_exact(cq, &mut wc, timeout)?;
    } else {
        wc[0].result()?;
    }
    Ok(wc[0])
}

/// Spins until `wcs.len()` completions arrived; fails at the first error completion.
#[inline]
pub fn poll_exact(
    cq: &CompletionQueue,
    wcs: &mut [WorkCompletion],
    timeout: PollTimeout,
) -> Result<()> {
    let mut got = 0;
    let mut empty: u32 = 0;
    let mut start: Option<Instant> = None;
    while got < wcs.len() {
        let n = cq.poll(&mut wcs[got..])?;
        if n == 0 {
            empty = empty.wrapping_add(1);
            if empty & 0xffff == 0 {
                // Let the report clock run (one-thread runs tick from stop checks) and give up
                // at once when it found the run failed (e.g. the peer gone): no 10 s stall.
                crate::control::stop_requested();
                if crate::control::run_failed() {
                    return Err(Error::Stopped(format!(
                        "stopped waiting for completions ({got} of {} arrived): the run failed",
                        wcs.len()
                    )));
                }
                let t0 = *start.get_or_insert_with(Instant::now);
                if t0.elapsed() > timeout.0 {
                    return Err(Error::timeout(
                        format!("no completion ({got} of {} arrived)", wcs.len()),
                        timeout.0,
                        Some("the peer is gone or the QP is stuck"),
                    ));
                }
            }
            continue;
        }
        for wc in &wcs[got..got + n] {
            wc.result()?;
        }
        got += n;
    }
    Ok(())
}
