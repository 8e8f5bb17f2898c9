//! Statistics over a small set of repeated measurements: what a sweep reports per point (median,
//! min/max, a 95 % confidence interval of the mean) and what a stability run checks for drift
//! (coefficient of variation, first tenth against last tenth).

/// Summary of repeated measurements of one quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleStats {
    /// Number of values.
    pub n: usize,
    /// Middle value (mean of the two middle ones for an even count).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n - 1 in the denominator); 0 for one value.
    pub stddev: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's t); 0 for one value.
    pub ci95_half: f64,
}

impl SampleStats {
    /// Statistics of `values` (NaNs are ignored); None when no value is left.
    pub fn of(values: &[f64]) -> Option<SampleStats> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let stddev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let ci95_half = if n > 1 {
            t95(n - 1) * stddev / (n as f64).sqrt()
        } else {
            0.0
        };
        Some(SampleStats {
            n,
            median,
            mean,
            min: v[0],
            max: v[n - 1],
            stddev,
            ci95_half,
        })
    }

    /// Lower end of the 95 % confidence interval of the mean.
    pub fn ci95_low(&self) -> f64 {
        self.mean - self.ci95_half
    }

    /// Upper end of the 95 % confidence interval of the mean.
    pub fn ci95_high(&self) -> f64 {
        self.mean + self.ci95_half
    }

    /// Coefficient of variation (stddev / mean); 0 when the mean is 0.
    pub fn cv(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            self.stddev / self.mean.abs()
        }
    }
}

/// Two-sided 95 % quantile of Student's t distribution with `df` degrees of freedom.
pub fn t95(df: usize) -> f64 {
    // Exact to three decimals up to 30 degrees of freedom; beyond, the normal quantile's
    // neighbourhood, stepped as the usual tables do.
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// Relative change from the mean of the first tenth of `series` to the mean of its last tenth
/// ((last - first) / first); None with fewer than 10 values or a zero first tenth.
pub fn drift_first_last_tenth(series: &[f64]) -> Option<f64> {
    let n = series.len();
    if n < 10 {
        return None;
    }
    let k = n / 10;
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let first = mean(&series[..k]);
    let last = mean(&series[n - k..]);
    if first == 0.0 {
        return None;
    }
    Some((last - first) / first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_known_sample() {
        let s = SampleStats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(
            (s.n, s.median, s.mean, s.min, s.max),
            (8, 4.5, 5.0, 2.0, 9.0)
        );
        // Sample variance 32/7.
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((s.ci95_half - 2.365 * s.stddev / 8f64.sqrt()).abs() < 1e-12);
        assert!((s.cv() - s.stddev / 5.0).abs() < 1e-12);
        let one = SampleStats::of(&[3.0]).unwrap();
        assert_eq!((one.median, one.stddev, one.ci95_half), (3.0, 0.0, 0.0));
        assert!(SampleStats::of(&[]).is_none());
        assert_eq!(SampleStats::of(&[1.0, 3.0, f64::NAN]).unwrap().median, 2.0);
    }

    #[test]
    fn drift_compares_the_first_and_last_tenth() {
        let mut s = vec![100.0; 20];
        s[18] = 80.0;
        s[19] = 80.0;
        assert!((drift_first_last_tenth(&s).unwrap() + 0.2).abs() < 1e-12);
        assert_eq!(drift_first_last_tenth(&s[..9]), None);
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(1000), 1.960);
    }
}
