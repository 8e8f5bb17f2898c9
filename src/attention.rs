//! The run's attention word, and the token that reads it.
//!
//! One atomic word says whether a loop should look up from its work: a stop was requested (a
//! signal, `--duration`, an error elsewhere), the run failed, or — on a one-thread run — the
//! report clock's tick is due. A loop holds an [`Attention`] token, handed down to it by the run
//! (see `framework::Meter`), and checks [`Attention::is_raised`] once per stretch of WRs; when it
//! is raised the loop *returns* to its caller, which does whatever the attention is for (print a
//! report line, refresh the registry, stop). Nothing here prints, touches the registry or runs a
//! hook: this module sits below `hot` and `verbs`, which only ever ask.
//!
//! Why a tick at all: a one-thread run stays a one-thread process. Once a process has two
//! threads, glibc sends every `write()` through its cancellation path (~50 instructions), and
//! rxe rings each doorbell with `write()`. So a one-thread run's report clock is driven from its
//! own loop's checks. The tick is polled, not signalled: a timer signal interrupts the posting
//! thread, and under qemu's TCG every signal delivery flushed the whole software TLB of that vCPU
//! (a uprobe on qemu's `tlb_flush` counted 40 flushes in 2 s on the sender's vCPU with a 20 Hz
//! SIGALRM, none for perftest); the TLB refills that follow cost the Soft-RoCE sender ~8 page
//! walks per operation and 10-25 % of its rate. [`Attention::is_raised`] is one load and one
//! branch while no tick is armed, and adds one TSC read and compare while one is (perftest reads
//! the TSC per post).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::stats::CycleClock;

/// A stop was requested.
const STOP: u32 = 1;
/// A tick is armed on some thread: checks also look at the time-stamp counter.
const CLOCK: u32 = 2;
/// The run failed (a watcher found a peer gone): waits that would outlast a stop end at once.
const FAILED: u32 = 4;
/// The stop came from SIGINT, SIGTERM or SIGHUP.
const SIGNALED: u32 = 8;

/// The process's word (the bits above; zero in the steady state of a run without a tick): the
/// one the stop signals raise.
static PROCESS: AtomicU32 = AtomicU32::new(0);
/// The low 32 bits of the time-stamp counter at the last tick, and the tick's period in counter
/// ticks (at most 2^32 - 1: a longer period only makes ticks early). 32 bits are enough for a
/// wrapping difference (100 ms is 2^29 ticks at 5 GHz) and spare the hot check a shift and an or.
static LAST_TICK: AtomicU32 = AtomicU32::new(0);
static PERIOD_TICKS: AtomicU32 = AtomicU32::new(u32::MAX);

/// The right to ask whether the run wants attention, and to ask it to stop. Copied freely (one
/// pointer); a run hands one to every loop it starts, so that what a loop may be interrupted by
/// shows in its signature. `control::install_stop_signals` gives the process's, which SIGINT,
/// SIGTERM and SIGHUP raise; [`Attention::detached`] a private one.
#[derive(Debug, Clone, Copy)]
pub struct Attention {
    word: &'static AtomicU32,
}

impl Attention {
    /// The process's token; only `control` makes it, once the stop signals are handled.
    pub(crate) fn process() -> Attention {
        Attention { word: &PROCESS }
    }

    /// A token of its own, which no signal raises: for a run embedded in another program, or a
    /// test that stops one wait without stopping the process. (Its word is leaked: a few bytes
    /// per call.)
    pub fn detached() -> Attention {
        Attention {
            word: Box::leak(Box::new(AtomicU32::new(0))),
        }
    }

    /// True when the loop should return to its caller: a stop or failure, or a tick due on this
    /// run's ticking thread. A pure read: it changes nothing.
    #[inline(always)]
    pub fn is_raised(self) -> bool {
        let a = self.word.load(Ordering::Relaxed);
        // The ticking case first: in a one-thread run it is the steady state.
        if a == CLOCK {
            return tick_due();
        }
        a != 0
    }

    /// True once a stop was requested (by a signal, `--duration`, or an error).
    #[inline(always)]
    pub fn stop_requested(self) -> bool {
        self.word.load(Ordering::Relaxed) & STOP != 0
    }

    /// True once the run was marked failed ([`Attention::mark_failed`]).
    #[inline]
    pub fn failed(self) -> bool {
        self.word.load(Ordering::Acquire) & FAILED != 0
    }

    /// True once SIGINT, SIGTERM or SIGHUP asked this process to stop (not `--duration` or an
    /// error): peers are usually being stopped at the same moment, so what they still owe us may
    /// never come.
    pub fn stopped_by_signal(self) -> bool {
        self.word.load(Ordering::Relaxed) & SIGNALED != 0
    }

    /// Requests a stop (e.g. when `--duration` has elapsed).
    pub fn request_stop(self) {
        self.word.fetch_or(STOP, Ordering::Relaxed);
    }

    /// Marks the run failed and requests a stop.
    pub fn mark_failed(self) {
        self.word.fetch_or(FAILED | STOP, Ordering::Release);
    }

    /// True when the armed tick is due (on any thread: only the one that armed it asks).
    #[inline]
    pub fn tick_due(self) -> bool {
        self.word.load(Ordering::Relaxed) & CLOCK != 0 && tick_due()
    }

    /// Arms a tick every `period`, seen by [`Attention::is_raised`] on the thread that checks;
    /// the returned guard re-arms it after each tick and disarms it when dropped. One at a time.
    pub fn arm_ticks(self, period: Duration) -> Ticks {
        let clock = CycleClock::new();
        LAST_TICK.store(clock.stamp() as u32, Ordering::Relaxed);
        // The first guess (one tick per ns, below any server's TSC rate) only makes the first
        // tick early; each re-arm calibrates against the wall clock as the run goes.
        PERIOD_TICKS.store(
            u32::try_from(period.as_nanos()).unwrap_or(u32::MAX).max(1),
            Ordering::Relaxed,
        );
        self.word.fetch_or(CLOCK, Ordering::Relaxed);
        Ticks {
            word: self.word,
            period,
            clock,
        }
    }
}

/// The signal handler's half: only atomics (async-signal-safe).
pub(crate) fn raise_from_signal() {
    PROCESS.fetch_or(STOP | SIGNALED, Ordering::Relaxed);
}

/// A counter that went backwards (the thread moved to a CPU whose TSC lags) wraps to a huge
/// difference: the tick comes early and re-anchors instead of never.
#[inline(always)]
fn tick_due() -> bool {
    (CycleClock::stamp_now() as u32).wrapping_sub(LAST_TICK.load(Ordering::Relaxed))
        >= PERIOD_TICKS.load(Ordering::Relaxed)
}

/// An armed tick ([`Attention::arm_ticks`]): every check sees it, so arm one only where one
/// thread checks (a one-thread run).
pub struct Ticks {
    word: &'static AtomicU32,
    period: Duration,
    clock: CycleClock,
}

impl Ticks {
    /// The tick was taken at `now` (the caller's clock read): the next one is due a period
    /// from now.
    pub fn rearm(&mut self, now: std::time::Instant) {
        LAST_TICK.store(self.clock.stamp() as u32, Ordering::Relaxed);
        let period = self.clock.ticks_per_us_at(now) * self.period.as_secs_f64() * 1e6;
        PERIOD_TICKS.store((period as u32).max(1), Ordering::Relaxed);
    }
}

impl Drop for Ticks {
    fn drop(&mut self) {
        self.word.fetch_and(!CLOCK, Ordering::Relaxed);
        PERIOD_TICKS.store(u32::MAX, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_armed_tick_raises_attention_until_rearmed_or_dropped() {
        let at = Attention::detached();
        let mut ticks = at.arm_ticks(Duration::from_millis(10));
        let t0 = Instant::now();
        let mut seen = 0;
        while t0.elapsed() < Duration::from_millis(300) {
            if at.is_raised() {
                assert!(at.tick_due() && !at.stop_requested());
                seen += 1;
                ticks.rearm(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(ticks);
        assert!(seen >= 10, "only {seen} ticks in 300 ms at 10 ms");
        std::thread::sleep(Duration::from_millis(20));
        assert!(!at.is_raised(), "raised after the tick was dropped");
    }
}
