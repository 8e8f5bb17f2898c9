//! Latency samples summarised as the original rw-postlist-latency does: average, median, 99th.

/// Average, median and 99th percentile of a set of samples, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    /// Number of samples.
    pub samples: usize,
    /// Mean.
    pub average_us: f64,
    /// 50th percentile.
    pub median_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
}

impl LatencySummary {
    /// Summarises `samples_us` (sorted in place); None when there are none.
    pub fn from_samples(samples_us: &mut [f64]) -> Option<Self> {
        if samples_us.is_empty() {
            return None;
        }
        samples_us.sort_by(|a, b| a.total_cmp(b));
        let n = samples_us.len();
        Some(LatencySummary {
            samples: n,
            average_us: samples_us.iter().sum::<f64>() / n as f64,
            median_us: samples_us[n / 2],
            p99_us: samples_us[(n * 99) / 100],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_index_like_the_original() {
        let mut s: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let l = LatencySummary::from_samples(&mut s).unwrap();
        assert_eq!(
            (l.samples, l.average_us, l.median_us, l.p99_us),
            (100, 50.5, 51.0, 100.0)
        );
        assert!(LatencySummary::from_samples(&mut []).is_none());
    }
}
