//! Which pairs are bad and which hosts are suspect, relative to the fleet itself: as NVIDIA's
//! ClusterKit judges a fleet, a pair is bad when its bandwidth is below a share of the fleet's
//! best pair (93 %) or its latency above a multiple of the fleet's best (2.1×), in either
//! direction; a host whose every pair is bad is the suspect, a bad pair between two hosts with
//! good pairs elsewhere is the link.

/// What makes a pair bad.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Bad below this percentage of the fleet's highest bandwidth.
    pub bw_min_pct: f64,
    /// Bad above this multiple of the fleet's lowest latency.
    pub lat_max_factor: f64,
}

/// One direction of a pair, measured or not.
#[derive(Debug, Clone, Default)]
pub struct Direction {
    /// Bandwidth, MB/s (perftest's BW average, 2^20 bytes).
    pub bw_mbps: Option<f64>,
    /// Latency, µs (perftest's t_typical).
    pub lat_us: Option<f64>,
    /// Why a measurement has no value.
    pub errors: Vec<String>,
    /// The tools' counter lines ("counters rxe0:1: …"), client's then server's.
    pub counters: Vec<String>,
    /// False when a tool marked its result questionable.
    pub trusted: bool,
}

/// Hosts `a` and `b` (indices into the fleet's host list), `ab` measured with `a` as the
/// client (sender), `ba` the other way round; the latency (a round trip) is measured once, in
/// `ab`.
#[derive(Debug, Clone)]
pub struct PairResult {
    /// One host.
    pub a: usize,
    /// The other.
    pub b: usize,
    /// `a` sending to `b`.
    pub ab: Direction,
    /// `b` sending to `a`.
    pub ba: Direction,
    /// Measured again alone after the first pass found it bad.
    pub retested: bool,
}

impl PairResult {
    /// Both directions' values of one kind.
    fn values(&self, kind: fn(&Direction) -> Option<f64>) -> [(usize, usize, Option<f64>); 2] {
        [
            (self.a, self.b, kind(&self.ab)),
            (self.b, self.a, kind(&self.ba)),
        ]
    }
}

/// The fleet's best bandwidth and latency over every pair measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Best {
    /// The highest bandwidth, MB/s.
    pub bw_mbps: Option<f64>,
    /// The lowest latency, µs.
    pub lat_us: Option<f64>,
}

/// The fleet's best values over `pairs`.
pub fn best(pairs: &[PairResult]) -> Best {
    let all = |kind: fn(&Direction) -> Option<f64>| {
        pairs
            .iter()
            .flat_map(|p| p.values(kind))
            .filter_map(|(_, _, v)| v)
            .collect::<Vec<f64>>()
    };
    Best {
        bw_mbps: all(|d| d.bw_mbps).into_iter().reduce(f64::max),
        lat_us: all(|d| d.lat_us).into_iter().reduce(f64::min),
    }
}

/// Why `p` is bad (empty: it is good), with host names from `names`.
pub fn reasons(p: &PairResult, best: Best, t: Thresholds, names: &[String]) -> Vec<String> {
    let mut why = Vec::new();
    for (from, to, d) in [(p.a, p.b, &p.ab), (p.b, p.a, &p.ba)] {
        let dir = format!("{} → {}", names[from], names[to]);
        for e in &d.errors {
            why.push(format!("{dir}: {e}"));
        }
        if let (Some(v), Some(top)) = (d.bw_mbps, best.bw_mbps) {
            if v < top * t.bw_min_pct / 100.0 {
                why.push(format!(
                    "{dir}: bandwidth {v:.1} MB/s, {:.0} % of the fleet's best {top:.1} (below {} %)",
                    100.0 * v / top,
                    t.bw_min_pct
                ));
            }
        }
        if let (Some(v), Some(low)) = (d.lat_us, best.lat_us) {
            if v > low * t.lat_max_factor {
                why.push(format!(
                    "{dir}: latency {v:.2} µs, {:.1}× the fleet's best {low:.2} (above {}×)",
                    v / low,
                    t.lat_max_factor
                ));
            }
        }
    }
    why
}

/// What a host is, by its pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostVerdict {
    /// No bad pair.
    Good,
    /// Some pairs bad, some good: the bad ones are links (cables, ports, switch paths).
    BadLinks,
    /// Every pair bad, and it has more than one: the host itself.
    Suspect,
    /// Its only pair is bad (a fleet of two): the link or either host.
    Undecided,
    /// Not reachable: not measured.
    Unreachable,
}

impl HostVerdict {
    /// As the table and JSON say it.
    pub fn name(self) -> &'static str {
        match self {
            HostVerdict::Good => "good",
            HostVerdict::BadLinks => "bad link(s)",
            HostVerdict::Suspect => "suspect",
            HostVerdict::Undecided => "bad pair (link or either host)",
            HostVerdict::Unreachable => "unreachable",
        }
    }
}

/// Each host's verdict; `bad[i]` says whether `pairs[i]` is bad; `reachable[h]` whether host
/// `h` took part.
pub fn hosts(reachable: &[bool], pairs: &[PairResult], bad: &[bool]) -> Vec<HostVerdict> {
    (0..reachable.len())
        .map(|h| {
            if !reachable[h] {
                return HostVerdict::Unreachable;
            }
            let mine: Vec<bool> = pairs
                .iter()
                .zip(bad)
                .filter(|(p, _)| p.a == h || p.b == h)
                .map(|(_, &b)| b)
                .collect();
            let n_bad = mine.iter().filter(|&&b| b).count();
            match (n_bad, mine.len()) {
                (0, _) => HostVerdict::Good,
                (1, 1) => HostVerdict::Undecided,
                (b, n) if b == n => HostVerdict::Suspect,
                _ => HostVerdict::BadLinks,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(bw: f64, lat: f64) -> Direction {
        Direction {
            bw_mbps: Some(bw),
            lat_us: Some(lat),
            trusted: true,
            ..Direction::default()
        }
    }

    fn pair(a: usize, b: usize, bw: f64, lat: f64) -> PairResult {
        PairResult {
            a,
            b,
            ab: dir(bw, lat),
            ba: dir(bw, lat),
            retested: false,
        }
    }

    const T: Thresholds = Thresholds {
        bw_min_pct: 93.0,
        lat_max_factor: 2.1,
    };

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("h{i}")).collect()
    }

    #[test]
    fn a_slow_host_is_the_suspect_and_its_pairs_are_bad() {
        // Host 2 at a third of the bandwidth and 5× the latency of the others.
        let pairs = vec![
            pair(0, 1, 3000.0, 2.0),
            pair(0, 2, 1000.0, 10.0),
            pair(1, 2, 1000.0, 10.0),
        ];
        let b = best(&pairs);
        let bad: Vec<bool> = pairs
            .iter()
            .map(|p| !reasons(p, b, T, &names(3)).is_empty())
            .collect();
        assert_eq!(bad, [false, true, true]);
        let v = hosts(&[true; 3], &pairs, &bad);
        assert_eq!(
            v,
            [
                HostVerdict::BadLinks,
                HostVerdict::BadLinks,
                HostVerdict::Suspect
            ]
        );
        let why = reasons(&pairs[1], b, T, &names(3));
        assert!(
            why[0].contains("h0 → h2: bandwidth 1000.0 MB/s, 33 % of the fleet's best 3000.0"),
            "{why:?}"
        );
        assert!(
            why[1].contains("latency 10.00 µs, 5.0× the fleet's best 2.00"),
            "{why:?}"
        );
    }

    #[test]
    fn a_healthy_fleet_within_the_thresholds_has_no_bad_pair() {
        let pairs = vec![
            pair(0, 1, 3000.0, 2.0),
            pair(0, 2, 2850.0, 4.1),
            pair(1, 2, 2900.0, 3.0),
        ];
        let b = best(&pairs);
        assert!(pairs.iter().all(|p| reasons(p, b, T, &names(3)).is_empty()));
    }

    #[test]
    fn one_bad_link_among_good_pairs_is_a_link_and_a_failed_run_is_bad() {
        let mut pairs = vec![
            pair(0, 1, 3000.0, 2.0),
            pair(0, 2, 3000.0, 2.0),
            pair(1, 2, 3000.0, 2.0),
            pair(0, 3, 3000.0, 2.0),
            pair(1, 3, 3000.0, 2.0),
            pair(2, 3, 3000.0, 2.0),
        ];
        pairs[2].ba = Direction {
            errors: vec!["write-bw failed: exit 1".into()],
            ..Direction::default()
        };
        let b = best(&pairs);
        let bad: Vec<bool> = pairs
            .iter()
            .map(|p| !reasons(p, b, T, &names(4)).is_empty())
            .collect();
        assert_eq!(bad, [false, false, true, false, false, false]);
        assert_eq!(
            hosts(&[true, true, true, true, false], &pairs, &bad),
            [
                HostVerdict::Good,
                HostVerdict::BadLinks,
                HostVerdict::BadLinks,
                HostVerdict::Good,
                HostVerdict::Unreachable
            ]
        );
        assert!(reasons(&pairs[2], b, T, &names(4))[0].starts_with("h2 → h1: write-bw failed"));
    }
}
