//! Which pairs of hosts meet in which round: the round-robin ("circle") schedule, so that every
//! pair meets once, each round's pairs are disjoint (they can run at once without sharing a
//! host), and there are n − 1 rounds for n hosts (n rounds when n is odd: each round one host
//! sits out).

/// The rounds of a fleet of `n` hosts; each pair `(a, b)` has `a < b`.
pub fn rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return Vec::new();
    }
    // An odd fleet gets a phantom host `n`: whoever meets it sits the round out.
    let m = n + n % 2;
    // The circle method: host 0 stays, the others rotate one place per round.
    let mut ring: Vec<usize> = (1..m).collect();
    let mut all = Vec::with_capacity(m - 1);
    for _ in 0..m - 1 {
        let mut round = Vec::with_capacity(m / 2);
        let mut meet = |a: usize, b: usize| {
            if a < n && b < n {
                round.push((a.min(b), a.max(b)));
            }
        };
        meet(0, ring[m - 2]);
        for i in 0..(m - 2) / 2 {
            meet(ring[i], ring[m - 3 - i]);
        }
        round.sort_unstable();
        all.push(round);
        ring.rotate_right(1);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::rounds;
    use std::collections::HashSet;

    #[test]
    fn every_pair_meets_once_in_disjoint_rounds() {
        for n in 2..=13 {
            let all = rounds(n);
            assert_eq!(all.len(), if n % 2 == 0 { n - 1 } else { n }, "n = {n}");
            let mut seen = HashSet::new();
            for round in &all {
                let mut hosts = HashSet::new();
                for &(a, b) in round {
                    assert!(a < b && b < n, "n = {n}: ({a}, {b})");
                    assert!(
                        hosts.insert(a) && hosts.insert(b),
                        "n = {n}: a host twice in {round:?}"
                    );
                    assert!(seen.insert((a, b)), "n = {n}: ({a}, {b}) twice");
                }
                assert_eq!(round.len(), n / 2, "n = {n}: {round:?}");
            }
            assert_eq!(seen.len(), n * (n - 1) / 2, "n = {n}");
        }
    }

    #[test]
    fn fewer_than_two_hosts_have_no_rounds() {
        assert!(rounds(0).is_empty());
        assert!(rounds(1).is_empty());
    }
}
