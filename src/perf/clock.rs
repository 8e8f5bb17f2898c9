//! The time-stamp counter, calibrated once per process against the monotonic clock (perftest
//! samples the TSC against gettimeofday for ~0.2 s in its get_cpu_mhz; -F only silences its
//! frequency warning, which we never print).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::stats::{CycleClock, Stamp};

/// How long the calibration samples.
const CALIBRATION: Duration = Duration::from_millis(100);

/// Ticks per microsecond, measured on first use.
pub fn ticks_per_us() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let clock = CycleClock::new();
        let t0 = Instant::now();
        while t0.elapsed() < CALIBRATION {
            std::thread::sleep(Duration::from_millis(10));
        }
        clock.ticks_per_us()
    })
}

/// Now, in ticks.
#[inline(always)]
pub fn now() -> Stamp {
    CycleClock::stamp_now()
}

/// `secs` seconds in ticks.
pub fn ticks(secs: u64) -> u64 {
    (secs as f64 * 1e6 * ticks_per_us()) as u64
}

/// The phases of a `-D` run (perftest's alarm states): `margin` seconds of warm-up, the sampled
/// window, `margin` seconds of cool-down.
#[derive(Debug, Clone, Copy)]
pub struct DurationWindow {
    /// Start of the sampled window.
    pub sample_start: Stamp,
    /// Its end.
    pub sample_end: Stamp,
    /// The end of the run.
    pub end: Stamp,
}

impl DurationWindow {
    /// A window starting now.
    pub fn starting_now(secs: u64, margin: u64) -> DurationWindow {
        let t0 = now();
        DurationWindow {
            sample_start: t0 + ticks(margin),
            sample_end: t0 + ticks(secs - margin),
            end: t0 + ticks(secs),
        }
    }

    /// True while `t` is inside the sampled window.
    #[inline(always)]
    pub fn sampling(&self, t: Stamp) -> bool {
        t >= self.sample_start && t < self.sample_end
    }
}
