//! Selective signaling: one signaled WR every `unsig_batch`, and send completions reaped before
//! the send queue could overflow (the paper's §4 invariants).
//!
//! [`Moderation`] is perftest's rule for the perftest-compatible tools: the last WR of every
//! `cq_mod` is signaled, at most `tx_depth` WRs are in flight, a completion retires `cq_mod`.
//!
//! Two reaping policies keep the paper's invariants:
//! - [`Reap::Eager`], the original suite's rule: at most one signaled WR in flight, its CQE reaped
//!   right before the next signaled WR is posted (WRs in flight < 2 × unsig_batch).
//! - [`Reap::Lazy`], perftest's: as many signaled WRs in flight as the send queue holds
//!   (`queue_depth / unsig_batch − 1`), and only when that many are out, every CQE that has
//!   arrived is reaped with one `ibv_poll_cq`. Fewer, fuller polls and a deeper pipeline.

use super::poll::{poll_exact, PollTimeout};
use crate::error::Result;
use crate::verbs::{CompletionQueue, WorkCompletion};

/// When send completions are reaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reap {
    /// One signaled WR in flight; reap it before posting the next (rdma_bench).
    #[default]
    Eager,
    /// Fill the send queue; reap in bulk only when it is full (perftest).
    Lazy,
}

/// CQEs reaped per `ibv_poll_cq` at most (perftest's CTX_POLL_BATCH).
const REAP_BATCH: usize = 16;

/// Counts posted WRs, says which must be signaled, and reaps their completions.
#[derive(Debug, Clone)]
pub struct UnsignaledCounter {
    unsig_batch: u32,
    /// WRs to post before the next signaled one: a countdown, so that a postlist without a
    /// signaled WR costs one compare and one subtraction (no division, no modulo).
    until_signal: u32,
    /// Signaled WRs posted (or about to be) whose CQE is not reaped yet.
    signaled_out: u32,
    /// The most signaled WRs that may be in flight.
    max_signaled_out: u32,
    posted: u64,
    /// `posted mod unsig_batch`, for the per-WR reference model only.
    #[cfg(test)]
    phase: u32,
    /// Room for one bulk reap.
    wcs: Box<[WorkCompletion]>,
}

/// What to do for the next WR (the per-WR reference model of [`UnsignaledCounter::next_batch`]
/// with [`Reap::Eager`]).
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
    /// Reap send completions ([`UnsignaledCounter::reap`]) before posting.
    pub poll_first: bool,
}

impl UnsignaledCounter {
    /// The original suite's counter: one WR in `unsig_batch` (≥ 1) signaled, [`Reap::Eager`].
    pub fn new(unsig_batch: u32) -> Self {
        Self::with_reap(unsig_batch, Reap::Eager, 0)
    }

    /// A counter with the given reaping policy; [`Reap::Lazy`] keeps up to
    /// `queue_depth / unsig_batch − 1` (at least one) signaled WRs in flight.
    pub fn with_reap(unsig_batch: u32, reap: Reap, queue_depth: u32) -> Self {
        let unsig_batch = unsig_batch.max(1);
        let max_signaled_out = match reap {
            Reap::Eager => 1,
            Reap::Lazy => (queue_depth / unsig_batch).saturating_sub(1).max(1),
        };
        UnsignaledCounter {
            unsig_batch,
            until_signal: 0,
            signaled_out: 0,
            max_signaled_out,
            posted: 0,
            #[cfg(test)]
            phase: 0,
            wcs: vec![WorkCompletion::default(); (max_signaled_out as usize).min(REAP_BATCH)]
                .into_boxed_slice(),
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

    /// Refuses a postlist of `n` WRs unless 1 ≤ n ≤ unsig_batch (then at most one WR of a
    /// postlist is signaled).
    #[inline(always)]
    pub fn check_postlist(&self, n: u32) -> Result<()> {
        // One compare for both n == 0 and n > unsig_batch.
        if n.wrapping_sub(1) >= self.unsig_batch {
            return Err(postlist_too_long(n, self.unsig_batch));
        }
        Ok(())
    }

    /// Decides for a whole postlist of `n` WRs and counts them: O(1) per postlist instead of per
    /// WR. `n` must not exceed `unsig_batch` (then at most one WR of a postlist is signaled).
    /// When `poll_first` is set, the caller must [`reap`](Self::reap) before posting: so this is
    /// crate-private, and [`prepare`](Self::prepare) is the public step that does both.
    #[cfg(test)]
    pub(crate) fn next_batch(&mut self, n: u32) -> Result<BatchSlot> {
        self.check_postlist(n)?;
        Ok(self.decide(n))
    }

    /// [`next_batch`](Self::next_batch) for an `n` that already passed
    /// [`check_postlist`](Self::check_postlist) (a larger one would only make the counter signal
    /// too rarely, which the provider refuses with ENOMEM once the queue is full).
    #[inline(always)]
    fn decide(&mut self, n: u32) -> BatchSlot {
        self.posted += u64::from(n);
        let at = self.until_signal;
        if at >= n {
            self.until_signal = at - n;
            return BatchSlot {
                signaled: None,
                poll_first: false,
            };
        }
        // WR `at` of this postlist is signaled; the next one comes unsig_batch WRs later.
        self.until_signal = at + self.unsig_batch - n;
        // `>=`, not `==`: after a failed reap the count may stand above the bound; every later
        // signaled WR must still reap first.
        let poll_first = self.signaled_out >= self.max_signaled_out;
        self.signaled_out += 1;
        BatchSlot {
            signaled: Some(at),
            poll_first,
        }
    }

    /// Decides for the next postlist (`next_batch`), then the reap it may call for: what both post paths do
    /// before posting a postlist of `n` WRs. Returns the index of the WR to signal, if any.
    #[inline(always)]
    pub fn prepare(
        &mut self,
        n: u32,
        cq: &CompletionQueue,
        timeout: PollTimeout,
    ) -> Result<Option<u32>> {
        self.check_postlist(n)?;
        self.prepare_checked(n, cq, timeout)
    }

    /// [`prepare`](Self::prepare) for an `n` that already passed
    /// [`check_postlist`](Self::check_postlist): the hot loop checks once, not per postlist.
    #[inline(always)]
    pub(crate) fn prepare_checked(
        &mut self,
        n: u32,
        cq: &CompletionQueue,
        timeout: PollTimeout,
    ) -> Result<Option<u32>> {
        let b = self.decide(n);
        if b.poll_first {
            self.reap(cq, timeout)?;
        }
        Ok(b.signaled)
    }

    /// WRs that may still be posted before the next signaled one.
    #[inline(always)]
    pub(crate) fn unsignaled_ahead(&self) -> u32 {
        self.until_signal
    }

    /// Whole postlists of `n` WRs that can be posted before one must carry the signaled WR: the
    /// hot loop posts them back to back without asking (see [`super::pump`]).
    #[inline(always)]
    pub(crate) fn unsignaled_postlists(&self, n: u32) -> u32 {
        self.until_signal / n
    }

    /// Counts `m` WRs posted unsignaled, as [`unsignaled_postlists`](Self::unsignaled_postlists)
    /// allowed; more than that breaks the signaling rule and is refused.
    #[inline(always)]
    pub(crate) fn skip_unsignaled(&mut self, m: u32) -> Result<()> {
        self.until_signal = self
            .until_signal
            .checked_sub(m)
            .ok_or_else(|| broken("more unsignaled WRs than the signaling rule allows"))?;
        self.posted += u64::from(m);
        Ok(())
    }

    /// Counts `m` reaped CQEs (each retires its signaled WR and every WR before it). More CQEs
    /// than signaled WRs in flight means the accounting is broken: an error, never a wrap (a
    /// wrapped count would stop reaping and overflow the send queue).
    #[inline(always)]
    pub(crate) fn retire(&mut self, m: u32) -> Result<()> {
        self.signaled_out = self
            .signaled_out
            .checked_sub(m)
            .ok_or_else(|| broken("more send completions reaped than signaled WRs posted"))?;
        Ok(())
    }

    /// Reaps at least one send completion, and with [`Reap::Lazy`] every other one that has
    /// arrived (never the CQE of the WR about to be posted: it is not posted yet).
    #[inline(always)]
    pub fn reap(&mut self, cq: &CompletionQueue, timeout: PollTimeout) -> Result<()> {
        let room = (self.signaled_out.saturating_sub(1) as usize).min(self.wcs.len());
        if room == 0 {
            return Ok(());
        }
        let wcs = &mut self.wcs[..room];
        let mut n = cq.poll(wcs)?;
        if n == 0 {
            poll_exact(cq, &mut wcs[..1], timeout)?;
            n = 1;
        } else {
            for wc in &wcs[..n] {
                wc.result()?;
            }
        }
        self.retire(n as u32)
    }

    /// Reaps every outstanding signaled completion (at the end of a run).
    pub fn drain(&mut self, cq: &CompletionQueue, timeout: PollTimeout) -> Result<()> {
        while self.signaled_out > 0 {
            let room = (self.signaled_out as usize).min(self.wcs.len());
            poll_exact(cq, &mut self.wcs[..room], timeout)?;
            self.retire(room as u32)?;
        }
        Ok(())
    }

    /// One signaled WR every this many.
    pub fn unsig_batch(&self) -> u32 {
        self.unsig_batch
    }

    /// The most signaled WRs this counter lets be in flight.
    pub fn max_signaled_out(&self) -> u32 {
        self.max_signaled_out
    }

    /// Signaled WRs whose completion is not reaped yet.
    pub fn signaled_out(&self) -> u32 {
        self.signaled_out
    }

    /// WRs counted so far.
    pub fn posted(&self) -> u64 {
        self.posted
    }
}

/// perftest's CQ moderation on one QP (its `-Q`/`--cq-mod` and `-t`/`--tx-depth`): the last WR
/// of every `cq_mod` is signaled, and the last WR of a counted run, so that every WR completes;
/// at most `depth` WRs are in flight; a completion retires the `cq_mod` WRs up to its own (the
/// last one may stand for fewer, so [`Moderation::completed`] can pass [`Moderation::posted`]).
#[derive(Debug, Clone, Copy)]
pub struct Moderation {
    cq_mod: u64,
    depth: u64,
    /// The index of a counted run's last WR (u64::MAX: a timed run has none).
    last: u64,
    posted: u64,
    completed: u64,
}

impl Moderation {
    /// The rule for `cq_mod` (≥ 1) and a send queue of `depth` WRs; `total` WRs in a counted run
    /// (None for a timed one).
    pub fn new(cq_mod: u32, depth: u32, total: Option<u64>) -> Moderation {
        Moderation {
            cq_mod: u64::from(cq_mod.max(1)),
            depth: u64::from(depth),
            last: total.map_or(u64::MAX, |t| t.saturating_sub(1)),
            posted: 0,
            completed: 0,
        }
    }

    /// True when `n` more WRs fit in flight.
    #[inline(always)]
    pub fn has_room(&self, n: u64) -> bool {
        self.posted + n <= self.completed + self.depth
    }

    /// Whether the next WR (a single one) must be signaled.
    #[inline(always)]
    pub fn next_signaled(&self) -> bool {
        let m = self.posted;
        m % self.cq_mod == self.cq_mod - 1 || m == self.last
    }

    /// Whether WR `j` of every chain of `n` (a postlist that divides by `cq_mod`) is signaled.
    pub fn chain_signaled(&self, j: u64) -> bool {
        (j + 1).is_multiple_of(self.cq_mod)
    }

    /// Counts `n` WRs posted.
    #[inline(always)]
    pub fn count_posted(&mut self, n: u64) {
        self.posted += n;
    }

    /// Counts one completion: the `cq_mod` WRs up to it are done. Returns how many that is.
    #[inline(always)]
    pub fn retire(&mut self) -> u64 {
        self.completed += self.cq_mod;
        self.cq_mod
    }

    /// WRs posted so far.
    pub fn posted(&self) -> u64 {
        self.posted
    }

    /// WRs completed so far (in steps of `cq_mod`).
    pub fn completed(&self) -> u64 {
        self.completed
    }
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> crate::Error {
    crate::Error::protocol(format!("selective signaling: {what}"))
}

#[cold]
#[inline(never)]
fn postlist_too_long(n: u32, unsig_batch: u32) -> crate::Error {
    crate::Error::Config(format!(
        "postlist ({n}) must not exceed unsig_batch ({unsig_batch})"
    ))
}

/// Checks the batching invariants before any resource is made; the message names the rule and
/// the flags as the user types them (`--postlist`, `--unsig-batch`, and `queue_flag` for the
/// send queue's depth).
pub fn check_batching(
    postlist: u32,
    unsig_batch: u32,
    queue_depth: u32,
    max_postlist: u32,
    queue_flag: &str,
) -> Result<(), String> {
    if postlist == 0 {
        return Err("--postlist must be at least 1".into());
    }
    if unsig_batch == 0 {
        return Err("--unsig-batch must be at least 1".into());
    }
    if postlist > max_postlist {
        return Err(format!(
            "--postlist {postlist} is above the maximum of {max_postlist}"
        ));
    }
    if postlist > unsig_batch {
        return Err(format!(
            "--postlist ({postlist}) must not exceed --unsig-batch ({unsig_batch})"
        ));
    }
    if queue_depth < 2 * unsig_batch {
        return Err(format!(
            "{queue_flag} ({queue_depth}) must be at least 2 x --unsig-batch ({})",
            2 * u64::from(unsig_batch)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perftests_moderation_signals_every_cq_mod_th_and_the_last() {
        let mut m = Moderation::new(4, 8, Some(10));
        let mut signaled = Vec::new();
        while m.posted() < 10 {
            if !m.has_room(1) {
                // A full queue: one completion retires cq_mod WRs.
                assert_eq!(m.retire(), 4);
                continue;
            }
            if m.next_signaled() {
                signaled.push(m.posted());
            }
            m.count_posted(1);
        }
        assert_eq!(signaled, [3, 7, 9]);
        assert!(!Moderation::new(4, 8, None).chain_signaled(2));
        assert!(Moderation::new(4, 8, None).chain_signaled(7));
        // A timed run has no last WR: only every cq_mod-th.
        let mut t = Moderation::new(1, 1, None);
        assert!(t.next_signaled() && t.has_room(1) && !t.has_room(2));
        t.count_posted(1);
        assert!(!t.has_room(1));
    }

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
                    if b.poll_first {
                        per_batch.retire(1).unwrap();
                    }
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

    /// Posts `batches` postlists under `reap`, with the NIC completing as late as it may (each
    /// reap finds exactly one CQE, the oldest), and returns the most WRs ever in flight.
    fn worst_in_flight(postlist: u32, unsig: u32, depth: u32, reap: Reap, batches: u32) -> u64 {
        let mut c = UnsignaledCounter::with_reap(unsig, reap, depth);
        let mut signaled_at: std::collections::VecDeque<u64> = Default::default();
        let mut retired_upto = 0u64;
        let mut worst = 0;
        for _ in 0..batches {
            let first = c.posted();
            let b = c.next_batch(postlist).unwrap();
            if b.poll_first {
                retired_upto = signaled_at.pop_front().unwrap() + 1;
                c.retire(1).unwrap();
            }
            if let Some(i) = b.signaled {
                signaled_at.push_back(first + u64::from(i));
            }
            assert_eq!(c.signaled_out() as usize, signaled_at.len());
            assert!(c.signaled_out() <= c.max_signaled_out());
            worst = worst.max(c.posted() - retired_upto);
        }
        worst
    }

    #[test]
    fn lazy_reaping_fills_but_never_overflows_the_send_queue() {
        for (postlist, unsig, depth) in [
            (1u32, 64u32, 128u32),
            (16, 16, 128),
            (16, 64, 128),
            (3, 7, 100),
            (1, 1, 128),
            (64, 64, 256),
        ] {
            let eager = worst_in_flight(postlist, unsig, depth, Reap::Eager, 2000);
            let lazy = worst_in_flight(postlist, unsig, depth, Reap::Lazy, 2000);
            assert!(
                lazy <= u64::from(depth),
                "{postlist}/{unsig}/{depth}: {lazy}"
            );
            assert!(
                eager <= lazy,
                "{postlist}/{unsig}/{depth}: {eager} > {lazy}"
            );
            // Lazy keeps the queue within one unsig batch of full.
            assert!(
                lazy + u64::from(unsig) >= u64::from(depth),
                "{postlist}/{unsig}/{depth}: only {lazy} in flight"
            );
        }
        // At depth = 2 × unsig_batch both policies are the same rule.
        let mut a = UnsignaledCounter::with_reap(64, Reap::Lazy, 128);
        let mut b = UnsignaledCounter::new(64);
        for _ in 0..1000 {
            assert_eq!(a.next_batch(8).unwrap(), b.next_batch(8).unwrap());
            a.retire(a.signaled_out().saturating_sub(1)).unwrap();
            b.retire(b.signaled_out().saturating_sub(1)).unwrap();
        }
    }

    #[test]
    fn lazy_reaping_allows_a_signaled_wr_per_unsig_batch_of_queue() {
        assert_eq!(
            UnsignaledCounter::with_reap(16, Reap::Lazy, 128).max_signaled_out(),
            7
        );
        assert_eq!(
            UnsignaledCounter::with_reap(64, Reap::Lazy, 128).max_signaled_out(),
            1
        );
        assert_eq!(UnsignaledCounter::new(16).max_signaled_out(), 1);
    }

    #[test]
    fn empty_or_too_long_postlists_are_refused() {
        let mut c = UnsignaledCounter::new(16);
        assert!(c.next_batch(0).is_err());
        assert_eq!(
            c.next_batch(17).unwrap_err().to_string(),
            "postlist (17) must not exceed unsig_batch (16)"
        );
        assert_eq!(c.posted(), 0);
        assert!(c.next_batch(16).is_ok());
    }

    #[test]
    fn broken_accounting_is_an_error_not_a_wrap() {
        let mut c = UnsignaledCounter::new(4);
        c.next_batch(1).unwrap(); // one signaled WR out
        assert!(c.retire(1).is_ok());
        let e = c.retire(1).unwrap_err();
        assert!(matches!(e, crate::Error::Protocol(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "selective signaling: more send completions reaped than signaled WRs posted"
        );
        assert_eq!(c.signaled_out(), 0, "a refused retire changes nothing");
        // Three WRs may go unsignaled before the next signaled one; a fourth may not.
        assert_eq!(c.unsignaled_postlists(1), 3);
        assert!(c.skip_unsignaled(3).is_ok());
        assert!(c.skip_unsignaled(1).is_err());
    }

    #[test]
    fn batching_rules_are_named() {
        assert_eq!(check_batching(16, 64, 128, 64, "--queue-depth"), Ok(()));
        assert_eq!(
            check_batching(0, 64, 128, 64, "--queue-depth").unwrap_err(),
            "--postlist must be at least 1"
        );
        assert_eq!(
            check_batching(65, 64, 128, 64, "--queue-depth").unwrap_err(),
            "--postlist 65 is above the maximum of 64"
        );
        assert_eq!(
            check_batching(32, 16, 128, 64, "--queue-depth").unwrap_err(),
            "--postlist (32) must not exceed --unsig-batch (16)"
        );
        assert_eq!(
            check_batching(16, 64, 100, 64, "--queue-depth").unwrap_err(),
            "--queue-depth (100) must be at least 2 x --unsig-batch (128)"
        );
    }
}
