//! perftest's statistics: BW peak and average and message rate from post and completion stamps,
//! latency from the gaps between consecutive posts. Where perftest's arithmetic is wrong (its
//! standard deviation truncates every deviation to a whole microsecond) ours is right; everything
//! else follows its rules, so that the two tables compare like for like.

/// Samples perftest leaves out at the top (LAT_MEASURE_TAIL).
pub const MEASURE_TAIL: usize = 2;

/// A latency table row (µs, or cycles with `-C`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyStats {
    /// Smallest sample.
    pub min: f64,
    /// perftest's t_max: the largest sample after dropping only the single largest.
    pub max: f64,
    /// t_typical: the median of the samples left after dropping the two largest.
    pub typical: f64,
    /// Mean of those samples.
    pub avg: f64,
    /// Their (population) standard deviation, computed correctly.
    pub stdev: f64,
    /// perftest's 99th percentile: sorted sample `ceil(0.99 n)` (n = samples kept).
    pub p99: f64,
    /// perftest's 99.9th percentile: sorted sample `ceil(0.999 n)`.
    pub p99_9: f64,
}

impl LatencyStats {
    /// Statistics of `deltas` (ticks between consecutive posts; sorted in place), each divided by
    /// `per_unit` (ticks per µs times 2 for round trips that perftest halves). None with fewer
    /// than three samples (nothing would be left after the tail).
    pub fn from_deltas(deltas: &mut [u64], per_unit: f64) -> Option<LatencyStats> {
        deltas.sort_unstable();
        let n = deltas.len().checked_sub(MEASURE_TAIL)?;
        if n == 0 {
            return None;
        }
        let at = |i: usize| deltas[i.min(deltas.len() - 1)] as f64 / per_unit;
        let kept = &deltas[..n];
        let median = if n % 2 == 0 {
            (kept[n / 2 - 1] as f64 + kept[n / 2] as f64) / 2.0
        } else {
            kept[n / 2] as f64
        };
        let avg = kept.iter().map(|&d| d as f64 / per_unit).sum::<f64>() / n as f64;
        let var = kept
            .iter()
            .map(|&d| {
                let x = d as f64 / per_unit - avg;
                x * x
            })
            .sum::<f64>()
            / n as f64;
        Some(LatencyStats {
            min: at(0),
            max: at(n),
            typical: median / per_unit,
            avg,
            stdev: var.sqrt(),
            p99: at((n as f64 * 0.99).ceil() as usize),
            p99_9: at((n as f64 * 0.999).ceil() as usize),
        })
    }
}

/// Bytes per reported unit: MB/s is 2^20 bytes per second, Gb/s 10^9 bits (perftest's
/// format_factor).
pub fn format_factor(gbits: bool) -> f64 {
    if gbits {
        125_000_000.0
    } else {
        1_048_576.0
    }
}

/// A BW table row.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BwRow {
    /// Message size.
    pub size: u64,
    /// Messages counted.
    pub iters: u64,
    /// Peak bandwidth (0 when not computed).
    pub peak: f64,
    /// Average bandwidth.
    pub avg: f64,
    /// Million messages per second.
    pub msg_rate: f64,
    /// `--cpu_util`: percent of the host's CPU busy over the window.
    pub cpu: Option<f64>,
}

impl BwRow {
    /// Average bandwidth and rate of `n` messages of `size` bytes in `ticks`.
    pub fn average(size: u64, n: u64, ticks: u64, ticks_per_s: f64, gbits: bool) -> BwRow {
        let secs = ticks.max(1) as f64 / ticks_per_s;
        BwRow {
            size,
            iters: n,
            peak: 0.0,
            avg: (size * n) as f64 / secs / format_factor(gbits),
            msg_rate: n as f64 / secs / 1e6,
            cpu: None,
        }
    }

    /// The row of what a `-D` window counted.
    pub fn of_window(size: u64, w: &super::clock::SampledWindow, gbits: bool) -> BwRow {
        let ticks_per_s = super::clock::ticks_per_us() * 1e6;
        BwRow {
            cpu: w.cpu_util(),
            ..BwRow::average(size, w.sampled(), w.ticks(), ticks_per_s, gbits)
        }
    }
}

/// perftest's peak: the shortest time per message over any window that starts at a post (every
/// `post_list`-th stamp) and ends at a stamped completion (every `cq_mod`-th, and the last).
/// `posted[i]` is the stamp of post `i`; `completed[j]` the stamp of the completion that
/// covered message `j` (only stamped entries are read). Returns ticks per message.
pub fn peak_ticks_per_msg(
    posted: &[u64],
    completed: &[u64],
    post_list: usize,
    cq_mod: usize,
) -> Option<f64> {
    let n = posted.len().min(completed.len());
    if n == 0 {
        return None;
    }
    let (post_list, cq_mod) = (post_list.max(1), cq_mod.max(1));
    let mut best: Option<u64> = None;
    let mut consider = |i: usize, j: usize| {
        let t = completed[j].saturating_sub(posted[i]) / (j - i + 1) as u64;
        if t > 0 && best.is_none_or(|b| t < b) {
            best = Some(t);
        }
    };
    for i in (0..n).step_by(post_list) {
        let first = (i + 1).div_ceil(cq_mod) * cq_mod - 1;
        for j in (first..n).step_by(cq_mod) {
            consider(i, j);
        }
        if !n.is_multiple_of(cq_mod) {
            consider(i, n - 1);
        }
    }
    best.map(|b| b as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_follows_perftests_index_rules_with_a_true_stdev() {
        // 12 round trips of 2, 4, …, 20 ticks and two outliers; 1 tick per µs, halved.
        let mut d: Vec<u64> = (1..=10).map(|i| 2 * i).collect();
        d.extend([1000, 5000]);
        let s = LatencyStats::from_deltas(&mut d, 2.0).unwrap();
        // n = 10 kept: 1..=10 µs.
        assert_eq!(s.min, 1.0);
        // t_max is sorted[n], the first outlier: perftest drops only the largest from it.
        assert_eq!(s.max, 500.0);
        assert_eq!(s.typical, 5.5);
        assert_eq!(s.avg, 5.5);
        // Population stdev of 1..=10: sqrt(8.25) = 2.872…; perftest's truncated one gives 2.828.
        assert!((s.stdev - 8.25f64.sqrt()).abs() < 1e-12);
        // ceil(9.9) = 10 and ceil(9.99) = 10: sorted[10], the first outlier.
        assert_eq!((s.p99, s.p99_9), (500.0, 500.0));
    }

    #[test]
    fn latency_of_a_thousand_iterations() {
        // ib_*_lat -n 1000: 999 gaps, 997 kept. Gap k (0-based) is k + 1 ticks.
        let mut d: Vec<u64> = (1..=999).rev().collect();
        let s = LatencyStats::from_deltas(&mut d, 1.0).unwrap();
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 998.0); // sorted[997]
        assert_eq!(s.typical, 499.0); // sorted[498], n odd
        assert_eq!(s.p99, 989.0); // sorted[ceil(987.03) = 988]
        assert_eq!(s.p99_9, 998.0); // sorted[ceil(996.003) = 997]
        assert!(LatencyStats::from_deltas(&mut [1, 2], 1.0).is_none());
    }

    #[test]
    fn bandwidth_units_are_perftests() {
        // 1 Mi messages of 1 KiB in one second: 1024 MB/s (MiB), 8.589934592 Gb/s, 1.048576 Mpps.
        let r = BwRow::average(1024, 1 << 20, 1_000_000, 1e6, false);
        assert_eq!((r.avg, r.msg_rate), (1024.0, 1.048576));
        let g = BwRow::average(1024, 1 << 20, 1_000_000, 1e6, true);
        assert!((g.avg - 8.589934592).abs() < 1e-9);
    }

    #[test]
    fn peak_is_the_best_window() {
        // Posts every 10 ticks, completions 5 ticks after each post; cq_mod 2: completions of
        // messages 1, 3 (and the last, 4) are stamped.
        let posted = [0, 10, 20, 30, 40];
        let completed = [0, 15, 0, 35, 45];
        // Window (i=2, j=3): (35 - 20) / 2 = 7 ticks per message; (i=4, j=4): 5.
        assert_eq!(peak_ticks_per_msg(&posted, &completed, 1, 2), Some(5.0));
        // With a post list of 2 only windows starting at 0, 2, 4 count: (4,4) still wins.
        assert_eq!(peak_ticks_per_msg(&posted, &completed, 2, 2), Some(5.0));
        assert_eq!(peak_ticks_per_msg(&[], &[], 1, 1), None);
    }
}
