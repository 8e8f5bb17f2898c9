//! The time-stamp counter, calibrated once per process against the monotonic clock (perftest
//! samples the TSC against gettimeofday for ~0.2 s in its get_cpu_mhz; -F only silences its
//! frequency warning, which we never print).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::cpu::{self, CpuTimes};
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

/// `us` microseconds in ticks.
pub fn ticks_of_us(us: u64) -> u64 {
    (us as f64 * ticks_per_us()) as u64
}

/// Busy-waits `ticks` (perftest's `--latency_gap` spin on the cycle counter).
pub fn spin(ticks: u64) {
    let start = now();
    while now().wrapping_sub(start) < ticks {
        std::hint::spin_loop();
    }
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
            sample_start: t0.saturating_add(ticks(margin)),
            sample_end: t0.saturating_add(ticks(secs.saturating_sub(margin))),
            end: t0.saturating_add(ticks(secs)),
        }
    }

    /// True while `t` is inside the sampled window.
    #[inline(always)]
    pub fn sampling(&self, t: Stamp) -> bool {
        t >= self.sample_start && t < self.sample_end
    }
}

/// What a loop counts in a `-D` run: the operations completed inside the sampled window, and
/// the window's edges as the loop saw them. Inert (always running, counting nothing) until
/// [`start`](Self::start), and for iteration runs, which never start it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SampledWindow {
    window: Option<DurationWindow>,
    first: Stamp,
    last: Stamp,
    in_window: bool,
    sampled: u64,
    /// `--cpu_util`: the CPU times where the sampled window opened and closed.
    cpu: (CpuTimes, CpuTimes),
}

impl SampledWindow {
    /// A window that starts now for a `-D` run (`Some((secs, margin))`), or an inert one.
    pub fn new(duration: Option<(u64, u64)>) -> SampledWindow {
        let mut w = SampledWindow::default();
        if let Some((secs, margin)) = duration {
            w.start(secs, margin);
        }
        w
    }

    /// Starts the window now (send-bw's receiver: at its first RECV, as perftest).
    pub fn start(&mut self, secs: u64, margin: u64) {
        self.window = Some(DurationWindow::starting_now(secs, margin));
    }

    /// True while a started window has time left (always true for an inert one); notes the
    /// sampled window's edges as it passes them.
    #[inline(always)]
    pub fn running(&mut self) -> bool {
        let Some(w) = self.window else { return true };
        let now = now();
        if !self.in_window && w.sampling(now) {
            self.in_window = true;
            self.first = now;
            if cpu::enabled() {
                self.cpu.0 = CpuTimes::now();
            }
        } else if self.in_window && !w.sampling(now) {
            self.in_window = false;
            self.last = now;
            if cpu::enabled() {
                self.cpu.1 = CpuTimes::now();
            }
        }
        now < w.end
    }

    /// Counts `n` operations if they completed inside the sampled window.
    #[inline(always)]
    pub fn count(&mut self, n: u64) {
        if self.in_window {
            self.sampled += n;
        }
    }

    /// Operations counted.
    pub fn sampled(&self) -> u64 {
        self.sampled
    }

    /// `--cpu_util`: percent of the host's CPU time busy over the sampled window (up to now if
    /// the loop ended inside it); None when not sampling.
    pub fn cpu_util(&self) -> Option<f64> {
        if !cpu::enabled() {
            return None;
        }
        let end = if self.last == 0 {
            CpuTimes::now()
        } else {
            self.cpu.1
        };
        Some(self.cpu.0.util_until(&end).unwrap_or(0.0))
    }

    /// The sampled window's length in ticks (up to now if the loop ended inside it).
    pub fn ticks(&self) -> u64 {
        if self.first == 0 {
            return 0;
        }
        let last = if self.last == 0 { now() } else { self.last };
        last.saturating_sub(self.first)
    }
}
