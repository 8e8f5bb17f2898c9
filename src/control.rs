//! Process control: the stop flag, the one place that installs signal handlers, and the ticker.
//!
//! SIGINT, SIGTERM and SIGHUP (or `--duration`) set a flag that the loops poll once per stretch of
//! WRs, so a stopped run unwinds normally, frees its QPs, MRs and segments, and prints its summary.
//! Several signals in quick succession (coreutils' `timeout` signals the child and its group, a
//! terminal sends SIGINT to every process of the job) are one stop. A deliberate second signal, a
//! second or more after the first, means "now": SysV segments are removed from the handler and
//! the process dies of the signal.
//!
//! The same check drives a periodic [`Ticker`], so that a single-threaded run can report and keep
//! its deadline without a second thread: once a process has two threads, glibc sends every
//! `write()` through its cancellation path (~50 instructions), and rxe rings each doorbell with
//! `write()`. The tick is polled, not signalled: a timer signal interrupts the posting thread, and
//! under qemu's TCG every signal delivery flushed the whole software TLB of that vCPU (a uprobe on
//! qemu's `tlb_flush` counted 40 flushes in 2 s on the sender's vCPU with a 20 Hz SIGALRM, none for
//! perftest); the TLB refills that follow cost the Soft-RoCE sender ~8 page walks per operation
//! and 10-25 % of its rate. [`stop_requested`] is one load and one branch while no ticker runs,
//! and adds one TSC read and compare per check while one does (perftest reads the TSC per post).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::stats::CycleClock;

const STOP: u32 = 1;
/// A [`Ticker`] runs: checks also look at the time-stamp counter.
const CLOCK: u32 = 2;

/// STOP and CLOCK bits; zero in the steady state of a run without a ticker.
static ATTENTION: AtomicU32 = AtomicU32::new(0);
/// The low 32 bits of the time-stamp counter at the last tick, and the ticker's period in counter
/// ticks (at most 2^32 - 1: a longer period only makes ticks early). 32 bits are enough for a
/// wrapping difference (50 ms is 2^28 ticks at 5 GHz) and spare the hot check a shift and an or.
static LAST_TICK: AtomicU32 = AtomicU32::new(0);
static PERIOD_TICKS: AtomicU32 = AtomicU32::new(u32::MAX);

thread_local! {
    static TICK_STATE: RefCell<Option<TickState>> = const { RefCell::new(None) };
}

/// The ticker's hook, and the clock that turns its period into counter ticks.
struct TickState {
    hook: Box<dyn FnMut()>,
    period: Duration,
    clock: CycleClock,
}

impl TickState {
    fn fire(&mut self) {
        LAST_TICK.store(self.clock.stamp() as u32, Ordering::Relaxed);
        // Calibrated against the wall clock as the run goes: no start-up delay, and the first
        // guess (one tick per ns, below any server's TSC rate) only makes the first tick early.
        let period = self.clock.ticks_per_us() * self.period.as_secs_f64() * 1e6;
        PERIOD_TICKS.store((period as u32).max(1), Ordering::Relaxed);
        (self.hook)();
    }
}

/// True once a stop was requested. Runs the [`Ticker`]'s hook when a tick is due on this thread.
#[inline(always)]
pub fn stop_requested() -> bool {
    let a = ATTENTION.load(Ordering::Relaxed);
    // The ticking case first: in a one-thread run it is the steady state.
    if a == CLOCK {
        if !tick_due() {
            return false;
        }
    } else if a == 0 {
        return false;
    }
    attend(a)
}

/// A counter that went backwards (the thread moved to a CPU whose TSC lags) wraps to a huge
/// difference: the tick comes early and re-anchors instead of never.
#[inline(always)]
fn tick_due() -> bool {
    (CycleClock::stamp_now() as u32).wrapping_sub(LAST_TICK.load(Ordering::Relaxed))
        >= PERIOD_TICKS.load(Ordering::Relaxed)
}

#[cold]
#[inline(never)]
fn attend(a: u32) -> bool {
    if a & CLOCK != 0 && tick_due() {
        TICK_STATE.with(|t| {
            // Only the ticker's thread takes the tick. A hook that itself asks stop_requested()
            // finds the cell borrowed and is not re-run.
            if let Ok(mut t) = t.try_borrow_mut() {
                if let Some(t) = t.as_mut() {
                    t.fire();
                }
            }
        });
    }
    ATTENTION.load(Ordering::Relaxed) & STOP != 0
}

/// Requests a stop (e.g. when `--duration` has elapsed).
pub fn request_stop() {
    ATTENTION.fetch_or(STOP, Ordering::Relaxed);
}

/// The first failure recorded by a watcher outside the workers (e.g. a peer found gone by the
/// report clock); the run stops and ends with it.
static FAILURE: Mutex<Option<crate::Error>> = Mutex::new(None);
static FAILED: AtomicBool = AtomicBool::new(false);

/// Records `err` as the run's failure (the first one wins) and requests a stop.
pub fn fail(err: crate::Error) {
    let mut f = FAILURE.lock().unwrap_or_else(|p| p.into_inner());
    if f.is_none() {
        *f = Some(err);
    }
    FAILED.store(true, Ordering::Release);
    request_stop();
}

/// True once a failure was recorded: waits that would otherwise outlast a stop end at once.
pub fn run_failed() -> bool {
    FAILED.load(Ordering::Acquire)
}

/// The recorded failure, if any (taken: a second call returns None).
pub fn take_failure() -> Option<crate::Error> {
    FAILURE.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// A second signal this long after the first kills the process; sooner ones are the same stop.
const DIE_AFTER_MS: u64 = 1000;
/// CLOCK_MONOTONIC in ms at the first signal, plus one (0: none yet).
static FIRST_SIGNAL_MS: AtomicU64 = AtomicU64::new(0);

/// Milliseconds of CLOCK_MONOTONIC (clock_gettime is async-signal-safe).
fn monotonic_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// True once SIGINT, SIGTERM or SIGHUP asked this process to stop (not `--duration` or an
/// error): peers are usually being stopped at the same moment, so what they still owe us may
/// never come.
pub fn stopped_by_signal() -> bool {
    FIRST_SIGNAL_MS.load(Ordering::Relaxed) != 0
}

/// The signal handler: only atomics, clock_gettime, shmctl and the default action.
fn on_signal(sig: libc::c_int) {
    ATTENTION.fetch_or(STOP, Ordering::Relaxed);
    let now = monotonic_ms() + 1;
    match FIRST_SIGNAL_MS.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {}
        Err(first) if now.saturating_sub(first) >= DIE_AFTER_MS => {
            crate::mem::release_all_segments();
            let _ = signal_hook::low_level::emulate_default_handler(sig);
        }
        Err(_) => {} // part of the same stop
    }
}

/// Installs the stop handler for SIGINT, SIGTERM and SIGHUP, once per process. This is the only
/// signal installer of the crate.
pub fn install_stop_signals() -> crate::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                // SAFETY: the action is async-signal-safe: it touches atomics and makes only
                // async-signal-safe calls (clock_gettime, shmctl, and the default action).
                unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) }
                    .map_err(|e| format!("cannot install a handler for signal {sig}: {e}"))?;
            }
            Ok(())
        })
        .clone()
        .map_err(crate::Error::Config)
}

/// Calls a hook on the creating thread about every `period`, from inside that thread's
/// [`stop_requested`] calls (so only where a loop checks for a stop, never in the middle of a
/// post). One ticker at a time; dropping it stops the ticks.
pub struct Ticker {
    /// The hook lives in this thread's storage: the ticker must stay on this thread.
    _not_send: PhantomData<*const ()>,
}

impl Ticker {
    /// Starts ticking; `hook` may call [`request_stop`].
    pub fn start(period: Duration, hook: Box<dyn FnMut()>) -> Ticker {
        let clock = CycleClock::new();
        LAST_TICK.store(clock.stamp() as u32, Ordering::Relaxed);
        TICK_STATE.with(|t| {
            *t.borrow_mut() = Some(TickState {
                hook,
                period,
                clock,
            })
        });
        PERIOD_TICKS.store(
            u32::try_from(period.as_nanos()).unwrap_or(u32::MAX).max(1),
            Ordering::Relaxed,
        );
        ATTENTION.fetch_or(CLOCK, Ordering::Relaxed);
        Ticker {
            _not_send: PhantomData,
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        ATTENTION.fetch_and(!CLOCK, Ordering::Relaxed);
        PERIOD_TICKS.store(u32::MAX, Ordering::Relaxed);
        TICK_STATE.with(|t| t.borrow_mut().take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::time::Instant;

    #[test]
    fn ticker_runs_its_hook_from_stop_checks_until_dropped() {
        let ticks = Rc::new(std::cell::Cell::new(0u32));
        let ticker = Ticker::start(Duration::from_millis(10), {
            let ticks = Rc::clone(&ticks);
            Box::new(move || ticks.set(ticks.get() + 1))
        });
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(300) {
            assert!(!stop_requested());
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(ticker);
        let seen = ticks.get();
        assert!(seen >= 10, "only {seen} ticks in 300 ms at 10 ms");
        std::thread::sleep(Duration::from_millis(50));
        assert!(!stop_requested());
        assert_eq!(ticks.get(), seen, "ticked after the ticker was dropped");
    }
}
