//! Cheap timestamps for latency samples: the CPU's time-stamp counter where there is one (as
//! perftest's `get_cycles`), converted to time by calibrating it against the monotonic clock over
//! the whole sampling run. `Instant::now()` can cost microseconds where the kernel's clocksource is
//! not the TSC (HPET under emulation, some VMs), which would land in every sample. Like perftest,
//! this assumes an invariant TSC that is synchronized across CPUs (every x86 server of the last
//! decade); a stamp pair that runs backwards counts as zero rather than as 2^64 ticks.

use std::time::Instant;

/// A raw timestamp from [`CycleClock::stamp`].
pub type Stamp = u64;

/// Starts at construction; [`CycleClock::ticks_per_us`] calibrates against the wall clock.
#[derive(Debug, Clone, Copy)]
pub struct CycleClock {
    start: Instant,
    start_stamp: Stamp,
}

impl Default for CycleClock {
    fn default() -> Self {
        Self::new()
    }
}

impl CycleClock {
    /// Starts the calibration interval now.
    pub fn new() -> Self {
        CycleClock {
            start: Instant::now(),
            start_stamp: Self::stamp_now(),
        }
    }

    /// The current timestamp (ticks).
    #[inline(always)]
    pub fn stamp(&self) -> Stamp {
        Self::stamp_now()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) fn stamp_now() -> Stamp {
        // SAFETY: RDTSC exists on every x86_64 CPU and has no memory effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub(crate) fn stamp_now() -> Stamp {
        use std::sync::OnceLock;
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }

    /// Ticks from `earlier` to `later` (zero if the counter went backwards).
    #[inline(always)]
    pub fn ticks(earlier: Stamp, later: Stamp) -> u64 {
        later.saturating_sub(earlier)
    }

    /// Ticks per microsecond over the time since [`CycleClock::new`]: call it after sampling, so
    /// the interval is long and the two clock reads' cost is spread thin.
    pub fn ticks_per_us(&self) -> f64 {
        self.ticks_per_us_at(Instant::now())
    }

    /// [`CycleClock::ticks_per_us`] with the wall clock read by the caller (`now`): a caller
    /// that already read it spares a second read.
    pub fn ticks_per_us_at(&self, now: Instant) -> f64 {
        let us = now.saturating_duration_since(self.start).as_secs_f64() * 1e6;
        let ticks = Self::ticks(self.start_stamp, Self::stamp_now()) as f64;
        if us > 0.0 && ticks > 0.0 {
            ticks / us
        } else {
            1e3
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn calibrated_ticks_measure_a_sleep() {
        let clock = CycleClock::new();
        let a = clock.stamp();
        std::thread::sleep(Duration::from_millis(50));
        let b = clock.stamp();
        let us = (b - a) as f64 / clock.ticks_per_us();
        assert!(
            (45_000.0..1_000_000.0).contains(&us),
            "50 ms sleep measured as {us} µs"
        );
    }
}
