//! What a thread's measured window sees of the run: its counter, its window's start and end,
//! and the checkpoint that says when to stop.

use std::cell::{Cell, RefCell};

use super::clock::ReportClock;
use crate::control::Attention;
use crate::error::Result;
use crate::hot::{self, PollTimeout, Postlist, UnsignaledCounter};
use crate::stats::{Counters, Tally};
use crate::verbs::QueuePair;

/// One thread's view of the run while it measures (handed to [`super::Role::measure`]).
///
/// The window (`start` … `stop`) is what the thread's rate covers; `count` publishes the
/// running total for the report (one relaxed store); `checkpoint` is the loop's one place to
/// look up from its work.
pub struct Meter<'r> {
    counters: &'r Counters,
    t: usize,
    attention: Attention,
    /// A one-thread run's report clock, stepped from this thread's checkpoints.
    clock: Option<&'r RefCell<ReportClock>>,
    open: Cell<bool>,
}

impl<'r> Meter<'r> {
    pub(crate) fn new(
        counters: &'r Counters,
        t: usize,
        attention: Attention,
        clock: Option<&'r RefCell<ReportClock>>,
    ) -> Meter<'r> {
        Meter {
            counters,
            t,
            attention,
            clock,
            open: Cell::new(false),
        }
    }

    /// This process's thread index.
    pub fn thread(&self) -> usize {
        self.t
    }
    /// The run's attention, for loops and waits below this one (they return when it is raised;
    /// the caller then calls [`Meter::checkpoint`]).
    pub fn attention(&self) -> Attention {
        self.attention
    }
    /// The bound for a poll that waits for completions (10 s; ends early if the run failed).
    pub fn poll_timeout(&self) -> PollTimeout {
        PollTimeout::new(self.attention)
    }
    /// Where the running total is published (for a loop below this one, e.g. [`hot::pump`]).
    pub fn tally(&self) -> Tally<'r> {
        self.counters.tally(self.t)
    }

    /// Opens the window: the thread's rate is measured from now.
    pub fn start(&self) {
        self.counters.start(self.t);
        self.open.set(true);
    }
    /// Publishes the thread's running total of operations.
    #[inline(always)]
    pub fn count(&self, ops: u64) {
        self.counters.set(self.t, ops);
    }
    /// The running total last published.
    pub fn ops(&self) -> u64 {
        self.counters.get(self.t)
    }
    /// Closes the window, if open: the rate is measured up to now, not up to the summary (which
    /// may come after draining, verifying and tearing down). The lifecycle closes a window the
    /// role left open when its measure step returns.
    pub fn stop(&self) {
        if self.open.replace(false) {
            self.counters.stop(self.t);
        }
    }
    /// Reopens a window that [`Meter::stop`] closed (work came back after a lull).
    pub fn resume(&self) {
        self.counters.resume(self.t);
        self.open.set(true);
    }
    /// The loop's checkpoint: call it once per batch. True while the run goes on. On a
    /// one-thread run this is where the report clock steps (between batches, never inside a
    /// post): the per-second report, the registry's heartbeat, `--duration`.
    #[inline(always)]
    pub fn checkpoint(&mut self) -> bool {
        if !self.attention.is_raised() {
            return true;
        }
        self.attend()
    }

    #[cold]
    #[inline(never)]
    fn attend(&mut self) -> bool {
        if let Some(clock) = self.clock {
            if self.attention.tick_due() {
                // A checkpoint reached from inside the clock's own step finds it borrowed.
                if let Ok(mut c) = clock.try_borrow_mut() {
                    c.step();
                }
            }
        }
        !self.attention.stop_requested()
    }

    /// The whole throughput loop of a selectively-signaled sender: opens the window, posts
    /// `batch` on `qp` with [`hot::pump`] until a stop or `limit` operations (rounded up to
    /// whole postlists), closes the window, then reaps the signaled completions still out.
    /// Returns the operations posted.
    // Never inlined: the CI instruction gate counts this function's inclusive cost, by name,
    // as the loop's (bench_scripts/compare-perftest.sh).
    #[inline(never)]
    pub fn pump<B: Postlist>(
        &mut self,
        qp: &mut QueuePair,
        batch: &mut B,
        counter: &mut UnsignaledCounter,
        limit: u64,
    ) -> Result<u64> {
        let timeout = self.poll_timeout();
        let tally = self.tally();
        self.start();
        let mut ops = 0;
        let posted = loop {
            match hot::pump(qp, batch, counter, ops, limit, timeout, tally) {
                Ok(n) => ops = n,
                Err(e) => break Err(e),
            }
            if ops >= limit || !self.checkpoint() {
                break Ok(());
            }
        };
        self.count(ops);
        self.stop();
        posted?;
        counter.drain(qp.send_cq(), timeout)?;
        Ok(ops)
    }
}

/// A server thread's measuring window: it opens with the first request, closes at a lull
/// ([`Lull::POLLS`] empty polls in a row) and reopens with the next request, so a server's rate
/// covers its traffic, not the quiet after its clients stopped.
#[derive(Debug, Default)]
pub struct Lull {
    idle: u32,
    started: bool,
}

impl Lull {
    /// Empty polls that make a lull (about 4 Ki: well under a millisecond of polling).
    pub const POLLS: u32 = 4096;

    /// A window not opened yet.
    pub fn new() -> Self {
        Lull::default()
    }

    /// An empty poll. True once every [`Self::POLLS`] of them in a row: time to look whether
    /// the peers have left (a registry round trip the busy path never pays).
    #[inline(always)]
    pub fn empty(&mut self, m: &Meter<'_>) -> bool {
        self.idle = self.idle.wrapping_add(1);
        if self.idle == Self::POLLS && self.started {
            m.stop();
        }
        self.idle.is_multiple_of(Self::POLLS)
    }

    /// A poll that found work.
    #[inline(always)]
    pub fn busy(&mut self, m: &Meter<'_>) {
        if !self.started {
            m.start();
            self.started = true;
        } else if self.idle >= Self::POLLS {
            m.resume();
        }
        self.idle = 0;
    }

    /// Work was seen at least once.
    pub fn started(&self) -> bool {
        self.started
    }
}
