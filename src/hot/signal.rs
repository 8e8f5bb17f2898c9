//! Selective signaling: one signaled WR every `unsig_batch`, and exactly one CQE polled before the
//! send queue could overflow (the paper's §4 invariants).

/// Counts posted WRs and says which must be signaled and when to reap a completion.
#[derive(Debug, Clone)]
pub struct UnsignaledCounter {
    unsig_batch: u32,
    /// `posted mod unsig_batch`, kept as a counter: no division in the hot loop.
    phase: u32,
    posted: u64,
}

/// What to do for the next WR (the per-WR reference model of [`UnsignaledCounter::next_batch`]).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Post this WR signaled.
    pub signaled: bool,
    /// Poll one send completion (the previous signaled WR's) before posting this one.
    pub poll_first: bool,
}

/// What to do for the next postlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSlot {
    /// Index of the one WR to signal, if any.
    pub signaled: Option<u32>,
    /// Poll one send completion (the previous signaled WR's) before posting.
    pub poll_first: bool,
}

impl UnsignaledCounter {
    /// A counter signaling one WR in `unsig_batch` (≥ 1).
    pub fn new(unsig_batch: u32) -> Self {
        UnsignaledCounter {
            unsig_batch: unsig_batch.max(1),
            phase: 0,
            posted: 0,
        }
    }

    /// Decides for the next WR and counts it.
    ///
    /// With RC's in-order completion, reaping the previous signaled WR's CQE before posting the
    /// next signaled one bounds the WRs in flight by `unsig_batch + postlist - 1`.
    #[cfg(test)]
    pub fn next_slot(&mut self) -> Slot {
        let first_of_batch = self.phase == 0;
        let slot = Slot {
            signaled: first_of_batch,
            poll_first: first_of_batch && self.posted > 0,
        };
        self.posted += 1;
        self.phase += 1;
        if self.phase == self.unsig_batch {
            self.phase = 0;
        }
        slot
    }

    /// Decides for a whole postlist of `n` WRs and counts them: O(1) per postlist instead of per
    /// WR. `n` must not exceed `unsig_batch` (then at most one WR of a postlist is signaled, and
    /// reaping one completion per postlist keeps the send queue from overflowing).
    #[inline(always)]
    pub fn next_batch(&mut self, n: u32) -> Result<BatchSlot, crate::Error> {
        if n == 0 || n > self.unsig_batch {
            return Err(crate::Error::Config(format!(
                "postlist ({n}) must not exceed unsig_batch ({})",
                self.unsig_batch
            )));
        }
        // Index in this postlist of the WR whose global number is a multiple of unsig_batch.
        let at = if self.phase == 0 {
            0
        } else {
            self.unsig_batch - self.phase
        };
        let signaled = (at < n).then_some(at);
        let poll_first = signaled.is_some() && self.posted + u64::from(at) > 0;
        self.posted += u64::from(n);
        self.phase += n;
        if self.phase >= self.unsig_batch {
            self.phase -= self.unsig_batch;
        }
        Ok(BatchSlot {
            signaled,
            poll_first,
        })
    }

    /// One signaled WR every this many.
    pub fn unsig_batch(&self) -> u32 {
        self.unsig_batch
    }

    /// WRs counted so far.
    pub fn posted(&self) -> u64 {
        self.posted
    }
}

/// Checks the batching invariants before any resource is made; the message names the rule.
pub fn check_batching(
    postlist: u32,
    unsig_batch: u32,
    queue_depth: u32,
    max_postlist: u32,
) -> Result<(), String> {
    if postlist == 0 {
        return Err("postlist must be at least 1".into());
    }
    if unsig_batch == 0 {
        return Err("unsig_batch must be at least 1".into());
    }
    if postlist > max_postlist {
        return Err(format!(
            "postlist {postlist} is above the maximum of {max_postlist}"
        ));
    }
    if postlist > unsig_batch {
        return Err(format!(
            "postlist ({postlist}) must not exceed unsig_batch ({unsig_batch})"
        ));
    }
    if queue_depth < 2 * unsig_batch {
        return Err(format!(
            "queue depth ({queue_depth}) must be at least 2 x unsig_batch ({})",
            2 * u64::from(unsig_batch)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_one_in_unsig_batch_and_polls_before_the_next() {
        let mut c = UnsignaledCounter::new(4);
        let slots: Vec<Slot> = (0..9).map(|_| c.next_slot()).collect();
        let sig: Vec<bool> = slots.iter().map(|s| s.signaled).collect();
        let poll: Vec<bool> = slots.iter().map(|s| s.poll_first).collect();
        assert_eq!(
            sig,
            [true, false, false, false, true, false, false, false, true]
        );
        assert_eq!(
            poll,
            [false, false, false, false, true, false, false, false, true]
        );
        assert_eq!(c.posted(), 9);
    }

    #[test]
    fn batch_decisions_match_the_per_wr_ones() {
        for unsig in [1u32, 2, 3, 4, 7, 16, 64] {
            for n in 1..=unsig.min(16) {
                let mut per_wr = UnsignaledCounter::new(unsig);
                let mut per_batch = UnsignaledCounter::new(unsig);
                for _ in 0..200 {
                    let slots: Vec<Slot> = (0..n).map(|_| per_wr.next_slot()).collect();
                    let b = per_batch.next_batch(n).unwrap();
                    let sig: Vec<u32> = (0..n).filter(|&i| slots[i as usize].signaled).collect();
                    assert_eq!(b.signaled, sig.first().copied(), "unsig {unsig} n {n}");
                    assert!(sig.len() <= 1);
                    assert_eq!(
                        b.poll_first,
                        slots.iter().any(|s| s.poll_first),
                        "unsig {unsig} n {n}"
                    );
                    assert_eq!(per_batch.posted(), per_wr.posted());
                }
            }
        }
    }

    #[test]
    fn in_flight_never_exceeds_queue_depth() {
        // Simulate: a CQE reaped at a poll_first retires everything up to the signaled WR it
        // belongs to; count WRs in flight right after each batch is posted.
        for (postlist, unsig) in [(1u32, 1u32), (1, 64), (16, 16), (16, 64), (64, 64), (3, 7)] {
            let depth = 2 * unsig;
            let mut c = UnsignaledCounter::new(unsig);
            let mut signaled_at: Vec<u64> = vec![];
            let mut retired_upto = 0u64;
            for _ in 0..1000 {
                for _ in 0..postlist {
                    let n = c.posted();
                    let s = c.next_slot();
                    if s.poll_first {
                        retired_upto = signaled_at.remove(0) + 1;
                    }
                    if s.signaled {
                        signaled_at.push(n);
                    }
                }
                let in_flight = c.posted() - retired_upto;
                assert!(
                    in_flight <= u64::from(depth),
                    "postlist {postlist} unsig {unsig}: {in_flight}"
                );
            }
        }
    }

    #[test]
    fn batching_rules_are_named() {
        assert_eq!(check_batching(16, 64, 128, 64), Ok(()));
        assert_eq!(
            check_batching(0, 64, 128, 64).unwrap_err(),
            "postlist must be at least 1"
        );
        assert_eq!(
            check_batching(65, 64, 128, 64).unwrap_err(),
            "postlist 65 is above the maximum of 64"
        );
        assert_eq!(
            check_batching(32, 16, 128, 64).unwrap_err(),
            "postlist (32) must not exceed unsig_batch (16)"
        );
        assert_eq!(
            check_batching(16, 64, 100, 64).unwrap_err(),
            "queue depth (100) must be at least 2 x unsig_batch (128)"
        );
    }
}
