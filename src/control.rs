//! Process control: the one place that installs signal handlers, and the run's recorded failure.
//!
//! SIGINT, SIGTERM and SIGHUP raise the run's [`Attention`] (a stop), which the loops see once
//! per stretch of WRs, so a stopped run unwinds normally, frees its QPs, MRs and segments, and
//! prints its summary. Several signals in quick succession (coreutils' `timeout` signals the
//! child and its group, a terminal sends SIGINT to every process of the job) are one stop. A
//! deliberate second signal, a second or more after the first, means "now": SysV segments are
//! removed from the handler and the process dies of the signal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

pub use crate::attention::{Attention, Ticks};

/// The first failure recorded by a watcher outside the workers (e.g. a peer found gone by the
/// report clock); the run stops and ends with it.
static FAILURE: Mutex<Option<crate::Error>> = Mutex::new(None);

/// Records `err` as the run's failure (the first one wins), marks the run failed and requests
/// a stop.
pub fn fail(attention: Attention, err: crate::Error) {
    let mut f = FAILURE.lock().unwrap_or_else(|p| p.into_inner());
    if f.is_none() {
        *f = Some(err);
    }
    attention.mark_failed();
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

/// The signal handler: only atomics, clock_gettime, shmctl and the default action.
fn on_signal(sig: libc::c_int) {
    crate::attention::raise_from_signal();
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

/// Installs the stop handler for SIGINT, SIGTERM and SIGHUP, once per process, and returns the
/// token that reads the stop (and the rest of the run's attention). This is the only signal
/// installer of the crate.
pub fn install_stop_signals() -> crate::Result<Attention> {
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
        .map_err(crate::Error::Config)?;
    Ok(Attention::process())
}
