//! Busy polling with a bound: a lost completion becomes an error, never a silent hang.
//!
//! [`Stall`] is the one bound: it counts empty polls, reads the clock only once per 64 Ki of them
//! (so it costs nothing while completions flow), fails after its limit of nothing, and gives up
//! at once when the run was marked failed (a watcher found the peer gone: no 10 s stall). The
//! limit is counted on a [`WaitClock`], which does not let one long gap between two looks (a
//! process or VM that was not scheduled) end a wait on its own. With
//! events on, an empty poll sleeps until a completion event instead of spinning (perftest's
//! `-e`). [`poll_exact`] and [`poll_one`] wait with it; loops that poll more than one CQ (the
//! perftest tools) use it directly.

use std::time::{Duration, Instant};

use crate::control::Attention;
use crate::error::{Error, Result};
use crate::verbs::{wait_any, CompletionQueue, WorkCompletion};

/// How long a poll may spin before giving up, and the run whose failure ends it early.
#[derive(Debug, Clone, Copy)]
pub struct PollTimeout {
    /// Give up after this long without a completion.
    pub limit: Duration,
    /// Ends the wait at once when the run is marked failed.
    pub attention: Attention,
}

impl PollTimeout {
    /// 10 s: far above any RC retry cycle (timeout 14 × retry 7 ≈ 0.5 s).
    pub const DEFAULT: Duration = Duration::from_secs(10);

    /// The default bound for a run with `attention`.
    pub fn new(attention: Attention) -> PollTimeout {
        PollTimeout {
            limit: Self::DEFAULT,
            attention,
        }
    }
    /// Another limit.
    pub fn with_limit(self, limit: Duration) -> PollTimeout {
        PollTimeout { limit, ..self }
    }
}

/// With events on, how long one wait for an event may sleep before the loop looks at the clock
/// and for a stop again.
const EVENT_WAIT: Duration = Duration::from_millis(100);

/// The time a wait has lasted, as bounds count it: each gap between two looks at the clock
/// counts at most half the limit. A process that was not scheduled for a while (an
/// oversubscribed host, a VM its host paused) then does not time out on its first look after it
/// runs again, when its completions are usually right there; a real stall still ends after a
/// few looks, however far apart they are. Two words, set up for nothing: it is made on every
/// bounded poll.
#[derive(Debug, Clone, Copy, Default)]
pub struct WaitClock {
    /// The last look; `None` until the wait's first look, which starts it.
    last: Option<Instant>,
    waited: Duration,
}

impl WaitClock {
    /// A new wait begins at the next look.
    #[inline(always)]
    pub fn restart(&mut self) {
        self.last = None;
    }

    /// Looks at the clock: how long this wait, bounded by `limit`, has lasted.
    #[cold]
    pub fn look(&mut self, limit: Duration) -> Duration {
        let now = Instant::now();
        match self.last {
            None => self.waited = Duration::ZERO,
            Some(last) => self.waited += now.duration_since(last).min(limit / 2),
        }
        self.last = Some(now);
        self.waited
    }
}

/// The bound on a wait for completions (see the module docs).
#[derive(Debug)]
pub struct Stall {
    empty: u32,
    clock: WaitClock,
    bound: PollTimeout,
    sleeps: bool,
    hint: &'static str,
}

impl Stall {
    /// A bound of `bound.limit`.
    pub fn new(bound: PollTimeout) -> Stall {
        Stall {
            empty: 0,
            clock: WaitClock::default(),
            bound,
            sleeps: false,
            hint: "the peer is gone or the QP is stuck",
        }
    }

    /// What the timeout's message suggests.
    pub fn hint(self, hint: &'static str) -> Stall {
        Stall { hint, ..self }
    }

    /// With `events`, an empty poll ([`Stall::idle_on`]) sleeps on the CQs' completion events,
    /// and the clock is read at every empty poll, as each may have slept.
    pub fn sleeping(self, events: bool) -> Stall {
        Stall {
            sleeps: events,
            ..self
        }
    }

    /// Progress was made: the bound starts again.
    #[inline(always)]
    pub fn progress(&mut self) {
        self.empty = 0;
        self.clock.restart();
    }

    /// Nothing arrived on `cqs`: with events on, sleeps until one reports an event (or
    /// briefly); then as [`Stall::idle`].
    #[inline(always)]
    pub fn idle_on(
        &mut self,
        cqs: &[&CompletionQueue],
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        if self.sleeps {
            wait_any(cqs, EVENT_WAIT)?;
        }
        self.idle(what)
    }

    /// Nothing arrived: an error after the limit of nothing (`no <what>`), or at once once the
    /// run failed. `what` is called only then.
    #[inline(always)]
    pub fn idle(&mut self, what: impl FnOnce() -> String) -> Result<()> {
        self.empty = self.empty.wrapping_add(1);
        if self.sleeps || self.empty & 0xffff == 0 {
            return self.look(what);
        }
        Ok(())
    }

    #[cold]
    fn look(&mut self, what: impl FnOnce() -> String) -> Result<()> {
        if self.bound.attention.failed() {
            return Err(Error::Stopped(format!(
                "stopped waiting for {}: the run failed",
                what()
            )));
        }
        if self.clock.look(self.bound.limit) > self.bound.limit {
            return Err(Error::timeout(
                format!("no {}", what()),
                self.bound.limit,
                Some(self.hint),
            ));
        }
        Ok(())
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
    let mut stall = Stall::new(timeout);
    while got < wcs.len() {
        let n = cq.poll(&mut wcs[got..])?;
        if n == 0 {
            stall.idle(|| format!("completion ({got} of {} arrived)", wcs.len()))?;
            continue;
        }
        for wc in &wcs[got..got + n] {
            wc.result()?;
        }
        got += n;
    }
    Ok(())
}
