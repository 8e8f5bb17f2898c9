//! The report clock: what happens around the measurement while it runs, every [`step`]
//! (100 ms): the registry's heartbeat and peer watches, progress marks, the links' state (once a
//! second, from the first step after the window opened), the once-a-second per-thread report,
//! stability-mode rows, and the end of the run at `--duration` (counted from the first
//! operation).
//!
//! [`step`]: ReportClock::step

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fabric::Fabric;
use crate::control::{fail, Attention, Ticks};
use crate::registry::Tended;
use crate::stats::{Counters, Reporter};

/// See the module docs.
pub(crate) struct ReportClock {
    reporter: Reporter,
    counters: Arc<Counters>,
    fabric: Arc<Fabric>,
    counting: bool,
    duration: Option<f64>,
    attention: Attention,
    /// The first operation was seen (or the role is passive).
    measuring: bool,
    deadline: Option<Instant>,
    next_report: Instant,
    /// Stability mode's interval, and when its next row is due.
    stats_every: Option<Duration>,
    next_stats: Instant,
    /// On a one-thread run: the tick armed on the worker, re-armed at each step.
    ticks: Option<Ticks>,
    /// When the links' state is read next.
    next_link: Instant,
}

/// How often the links' state is read while measuring.
const LINK_EVERY: Duration = Duration::from_secs(1);

impl ReportClock {
    pub(crate) fn new(
        reporter: Reporter,
        counters: Arc<Counters>,
        fabric: Arc<Fabric>,
        counting: bool,
        duration: Option<f64>,
        stats_every: Option<Duration>,
        attention: Attention,
    ) -> ReportClock {
        ReportClock {
            reporter,
            counters,
            fabric,
            counting,
            duration,
            attention,
            measuring: false,
            deadline: None,
            next_report: Instant::now() + Duration::from_secs(1),
            stats_every,
            next_stats: Instant::now(),
            ticks: None,
            next_link: Instant::now() + LINK_EVERY,
        }
    }

    /// Stepped from the worker's checkpoints when `ticks` is due.
    pub(crate) fn ticking(self, ticks: Ticks) -> ReportClock {
        ReportClock {
            ticks: Some(ticks),
            ..self
        }
    }

    /// The period to step at: `tick`, or the stability interval when that is shorter.
    pub(crate) fn period(&self, tick: Duration) -> Duration {
        self.stats_every.map_or(tick, |every| every.min(tick))
    }

    /// A reporter over the same counters, for a clock thread that did not come back.
    pub(crate) fn spare_reporter(&self) -> Reporter {
        Reporter::new(self.reporter.info().clone(), Arc::clone(&self.counters))
    }

    /// The reporter, for the summary.
    pub(crate) fn into_reporter(self) -> Reporter {
        self.reporter
    }

    /// One step of the clock (see the module docs).
    pub(crate) fn step(&mut self) {
        // One clock read serves the whole step: under emulation (and callgrind) a read costs
        // a few hundred instructions, and a one-thread run pays the step from its own loop.
        let now = Instant::now();
        if let Some(t) = &mut self.ticks {
            t.rearm(now);
        }
        self.tend_registry(now);
        self.counters.mark_progress(now);
        if now >= self.next_link {
            self.fabric.sample_links();
            self.next_link = now + LINK_EVERY;
        }
        let threads = self.counters.len();
        if !self.measuring {
            if self.counting && (0..threads).all(|t| self.counters.get(t) == 0) {
                return;
            }
            // The clock starts with the first operation: deadline and report ticks count from it.
            self.measuring = true;
            self.deadline = self.duration.map(|d| now + Duration::from_secs_f64(d));
            self.next_report = now + Duration::from_secs(1);
            self.next_stats = now + self.stats_every.unwrap_or_default();
        }
        let deadline_hit = self.deadline.is_some_and(|d| now >= d);
        if deadline_hit {
            self.attention.request_stop();
        }
        // After a stop (other than the deadline's own step) threads are winding down: no rows.
        let stopped = self.attention.stop_requested();
        if let Some(every) = self.stats_every.filter(|_| deadline_hit || !stopped) {
            // Rows fall on the interval's grid (from the first operation), so that --duration
            // D and --stats-interval I give exactly D / I rows per thread; a late step writes
            // one row for the time it covers, not one per missed slot.
            if now >= self.next_stats {
                self.reporter.stability_tick();
                while self.next_stats <= now {
                    self.next_stats += every;
                }
            }
        }
        if now >= self.next_report && self.counting && !stopped {
            self.reporter.tick();
            self.next_report = now + Duration::from_secs(1);
        }
    }

    /// Keeps our registry entries alive and checks the peers we depend on. The registry is for
    /// meeting and for "done": while it does not answer the run goes on (its connections say
    /// whether its peers live); a peer is lost when it says it failed, when another run took
    /// its name, or when its entry stayed away for [`crate::registry::GRACE`] after expiring.
    fn tend_registry(&mut self, now: Instant) {
        match crate::registry::tend(now) {
            Tended::Fine => {}
            Tended::Back(after) => println!(
                "main: the registry answers again (it did not for {:.0} s)",
                after.as_secs_f64()
            ),
            Tended::Unreachable { error, first: true } => println!(
                "main: the registry does not answer ({error}); the run goes on: its \
                 connections, not the registry, say whether its peers live"
            ),
            Tended::Unreachable { first: false, .. } => {}
            Tended::PeerGone(error) => fail(self.attention, error),
        }
    }

    /// Steps every `period` on its own thread until all `threads` workers finished; returns the
    /// reporter for the summary.
    pub(crate) fn step_every(
        mut self,
        period: Duration,
        finished: &AtomicUsize,
        threads: usize,
    ) -> Reporter {
        while finished.load(Ordering::Acquire) < threads {
            std::thread::sleep(period);
            self.step();
        }
        self.reporter
    }
}
