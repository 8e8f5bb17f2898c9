//! Zipf-distributed key ranks for KV clients (`--zipf THETA`): Gray et al.'s method ("Quickly
//! generating billion-record synthetic databases", SIGMOD '94), the generator YCSB uses. Rank 0
//! is the most popular key; callers that want hot keys spread over servers hash the rank.

/// Draws ranks in `0..n` with P(rank k) ∝ 1 / (k + 1)^θ.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// 1 + 0.5^θ: below it (times zetan) the draw is rank 1.
    two: f64,
}

impl Zipf {
    /// A generator over `n` ranks with skew `theta` in [0, 1) (0 is uniform; KV benchmarks
    /// usually take 0.99). Precomputing ζ(n) costs O(n) once.
    pub fn new(n: u64, theta: f64) -> Result<Zipf, String> {
        if n == 0 {
            return Err("a Zipf distribution needs at least one key".into());
        }
        if !(0.0..1.0).contains(&theta) {
            return Err(format!("--zipf {theta} must be at least 0 and below 1"));
        }
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let eta = if n > 1 {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        } else {
            1.0
        };
        Ok(Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            two: 1.0 + 0.5f64.powf(theta),
        })
    }

    /// The rank for a uniform draw `u` in [0, 1).
    #[inline]
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.two || self.n < 3 {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }

    /// The skew.
    pub fn theta(&self) -> f64 {
        self.theta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(n: u64, theta: f64, draws: u64) -> Vec<u64> {
        let z = Zipf::new(n, theta).unwrap();
        let mut c = vec![0u64; n as usize];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..draws {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            c[z.rank(u) as usize] += 1;
        }
        c
    }

    #[test]
    fn skewed_ranks_follow_the_power_law() {
        let (n, draws) = (1000u64, 400_000u64);
        let c = counts(n, 0.99, draws);
        let zetan: f64 = (1..=n).map(|i| 1.0 / (i as f64).powf(0.99)).sum();
        // Rank 0's share is 1 / ζ(n) (about 13 % here), within 5 % of itself.
        let share = c[0] as f64 / draws as f64;
        assert!((share * zetan - 1.0).abs() < 0.05, "rank 0 share {share}");
        // Rank 9 is about 10^0.99 ≈ 9.8 times rarer than rank 0.
        let ratio = c[0] as f64 / c[9] as f64;
        assert!((8.0..12.0).contains(&ratio), "rank0/rank9 = {ratio}");
        // The tail is reached.
        assert!(c[500..].iter().sum::<u64>() > 0);
    }

    #[test]
    fn theta_zero_is_uniform_and_bad_thetas_are_refused() {
        let c = counts(10, 0.0, 100_000);
        for (k, &v) in c.iter().enumerate() {
            assert!((9_000..11_000).contains(&v), "rank {k}: {v}");
        }
        assert!(Zipf::new(10, 1.0).is_err());
        assert!(Zipf::new(10, -0.1).is_err());
        assert!(Zipf::new(0, 0.5).is_err());
        assert_eq!(Zipf::new(1, 0.99).unwrap().rank(0.7), 0);
    }
}
