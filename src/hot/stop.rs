//! Stopping a run: SIGINT/SIGTERM (or `--duration`) set a flag the hot loops poll once per batch,
//! so a stopped run unwinds normally, frees its QPs, MRs and segments, and prints its summary.
//! A second signal means "now": segments are removed and the process dies of the signal.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

/// True once a stop was requested.
#[inline(always)]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Requests a stop (e.g. when `--duration` has elapsed).
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
    if SIGNALS.fetch_add(1, Ordering::Relaxed) >= 1 {
        crate::mem::release_all_segments();
        // SAFETY: signal() and raise() are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Installs the stop handler for SIGINT, SIGTERM and SIGHUP.
pub fn install_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only touches atomics and makes async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}
