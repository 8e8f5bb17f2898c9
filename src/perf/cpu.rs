//! `--cpu_util`: the host's CPU time, from the first line of `/proc/stat`, sampled where a `-D`
//! window opens and closes. Busy is every state but idle and iowait, over all CPUs. (perftest
//! counts user time against user plus idle only, so system time, which a kernel-driven device
//! such as Soft-RoCE spends most, never shows in its column.)

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns sampling on for this process's `-D` windows.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether windows sample the CPU.
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Jiffies spent busy and in all, over all CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Not idle, not waiting for I/O.
    pub busy: u64,
    /// Every state.
    pub total: u64,
}

impl CpuTimes {
    /// Now (zeros when /proc/stat cannot be read).
    pub fn now() -> CpuTimes {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| CpuTimes::parse(&s))
            .unwrap_or_default()
    }

    /// The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal
    /// (guest time is already inside user and nice).
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().next()?;
        let mut f = line.split_whitespace();
        if f.next()? != "cpu" {
            return None;
        }
        let v: Vec<u64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
        if v.len() < 4 {
            return None;
        }
        let total: u64 = v.iter().sum();
        let idle = v[3] + v.get(4).copied().unwrap_or(0);
        Some(CpuTimes {
            busy: total - idle,
            total,
        })
    }

    /// Percent busy from `self` to `later` (None when no time passed or either was unread).
    pub fn util_until(&self, later: &CpuTimes) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let busy = later.busy.checked_sub(self.busy)?;
        (total > 0 && self.total > 0).then(|| 100.0 * busy as f64 / total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_all_but_idle_and_iowait() {
        // A real first line (Debian 12, 2 vCPUs).
        let a = CpuTimes::parse(
            "cpu  1200 10 800 9000 90 0 50 0 0 0\ncpu0 600 5 400 4500 45 0 25 0 0 0\n",
        )
        .unwrap();
        assert_eq!(
            a,
            CpuTimes {
                busy: 2060,
                total: 11150
            }
        );
        let b = CpuTimes {
            busy: a.busy + 150,
            total: a.total + 200,
        };
        assert_eq!(a.util_until(&b), Some(75.0));
        assert_eq!(a.util_until(&a), None);
        assert_eq!(CpuTimes::parse("intr 1 2 3"), None);
    }
}
