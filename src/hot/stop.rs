//! Stopping a run: SIGINT/SIGTERM (or `--duration`) set a flag the hot loops poll once per batch,
//! so a stopped run unwinds normally, frees its QPs, MRs and segments, and prints its summary.
//! A second signal means "now": segments are removed and the process dies of the signal.
//!
//! The same flag word carries a periodic tick ([`Ticker`]) so that a single-threaded run can
//! report and keep its deadline without a second thread: once a process has two threads, glibc
//! sends every `write()` through its cancellation path (~50 instructions), and rxe rings each
//! doorbell with `write()`. The hot loops pay nothing for it: [`stop_requested`] is still one
//! load and one branch while the word is zero.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const STOP: u32 = 1;
const TICK: u32 = 2;

/// STOP and TICK bits; zero in the steady state.
static ATTENTION: AtomicU32 = AtomicU32::new(0);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

thread_local! {
    static TICK_HOOK: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// True once a stop was requested. Runs the [`Ticker`]'s hook when a tick is due on this thread.
#[inline(always)]
pub fn stop_requested() -> bool {
    let a = ATTENTION.load(Ordering::Relaxed);
    a != 0 && attend(a)
}

#[cold]
#[inline(never)]
fn attend(a: u32) -> bool {
    if a & TICK != 0 {
        TICK_HOOK.with(|h| {
            // Only the ticker's thread takes the tick. A hook that itself asks stop_requested()
            // finds the cell borrowed and is not re-run.
            if let Ok(mut h) = h.try_borrow_mut() {
                if let Some(f) = h.as_mut() {
                    ATTENTION.fetch_and(!TICK, Ordering::Relaxed);
                    f();
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

extern "C" fn on_signal(sig: libc::c_int) {
    ATTENTION.fetch_or(STOP, Ordering::Relaxed);
    if SIGNALS.fetch_add(1, Ordering::Relaxed) >= 1 {
        crate::mem::release_all_segments();
        // SAFETY: signal() and raise() are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

extern "C" fn on_alarm(_: libc::c_int) {
    ATTENTION.fetch_or(TICK, Ordering::Relaxed);
}

fn install(sig: libc::c_int, handler: extern "C" fn(libc::c_int), flags: libc::c_int) {
    // SAFETY: the handlers only touch atomics and make async-signal-safe calls.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as libc::sighandler_t;
        sa.sa_flags = flags;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// Installs the stop handler for SIGINT, SIGTERM and SIGHUP.
pub fn install_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        install(sig, on_signal, 0);
    }
}

fn set_timer(period: Duration) {
    let tv = libc::timeval {
        tv_sec: period.as_secs() as libc::time_t,
        tv_usec: period.subsec_micros() as libc::suseconds_t,
    };
    let it = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: plain syscall on valid pointers; ITIMER_REAL only raises SIGALRM, handled above.
    unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) };
}

/// Calls a hook on the creating thread about every `period`, from inside that thread's
/// [`stop_requested`] calls (so only where a loop checks for a stop, never in the middle of a
/// post). SIGALRM drives it, with SA_RESTART; dropping the ticker disarms the timer.
pub struct Ticker {
    /// The hook lives in this thread's storage: the ticker must stay on this thread.
    _not_send: PhantomData<*const ()>,
}

impl Ticker {
    /// Starts ticking; `hook` may call [`request_stop`].
    pub fn start(period: Duration, hook: Box<dyn FnMut()>) -> Ticker {
        TICK_HOOK.with(|h| *h.borrow_mut() = Some(hook));
        install(libc::SIGALRM, on_alarm, libc::SA_RESTART);
        set_timer(period);
        Ticker {
            _not_send: PhantomData,
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        set_timer(Duration::ZERO);
        ATTENTION.fetch_and(!TICK, Ordering::Relaxed);
        TICK_HOOK.with(|h| h.borrow_mut().take());
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
            // A sleep interrupted by SIGALRM resumes (SA_RESTART / std's EINTR loop).
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
