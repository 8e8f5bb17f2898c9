//! What `--verify 1` checks for the sequencers, on both sides.
//!
//! Clients: every value is strictly greater than the previous one that came over the same reply
//! QP (a server hands values out in increasing order and one UD QP delivers in order; replies
//! over different QPs may overtake each other, so order across them is not a property of the
//! design). Each client reports its count and a multiset hash of its values.
//! Server: once its clients reported, the values handed out (its counter) must equal the sum of
//! the counts, and the clients' hashes must add up to the hash of exactly `0 .. counter`, so a
//! value handed out twice, or lost, fails the run (a collision has probability 2^-64).

use crate::error::{Error, Result};
use crate::registry::Registry;
use std::time::{Duration, Instant};

/// The per-value hash whose wrapping sum is the multiset hash (splitmix64).
pub use crate::kv::splitmix64 as mix;

/// The multiset hash of `0 .. n`.
pub fn hash_of_range(n: u64) -> u64 {
    (0..n).fold(0u64, |h, v| h.wrapping_add(mix(v)))
}

/// A client's view of the values it received.
#[derive(Debug, Default)]
pub struct SeqTracker {
    /// (reply QP number, last value from it).
    last: Vec<(u32, u64)>,
    /// Values received.
    pub count: u64,
    /// Wrapping sum of `mix(value)`.
    pub hash: u64,
    /// The first out-of-order value, as a message.
    pub first_bad: Option<String>,
}

impl SeqTracker {
    /// Records `value`, received from reply QP `src_qp`.
    #[inline]
    pub fn record(&mut self, src_qp: u32, value: u64) {
        self.count += 1;
        self.hash = self.hash.wrapping_add(mix(value));
        match self.last.iter_mut().find(|(q, _)| *q == src_qp) {
            Some((_, last)) => {
                if value <= *last && self.first_bad.is_none() {
                    self.first_bad = Some(format!(
                        "value {value} from reply QP {src_qp:#x} is not greater than the previous one from it ({last})"
                    ));
                }
                *last = value;
            }
            None => self.last.push((src_qp, value)),
        }
    }

    /// The client's verdict: the first out-of-order value, if any.
    pub fn check(&self, who: &str) -> Result<()> {
        match &self.first_bad {
            Some(m) => Err(Error::Verify(format!("{who}: {m}"))),
            None => Ok(()),
        }
    }
}

/// A sequencer client's end with `--verify 1`: its own order check, then its count and hash
/// left in the registry for the server run `server_run` (which checks the totals).
pub fn report_client(
    reg: &Registry,
    me: &str,
    id: usize,
    track: &SeqTracker,
    server_run: u64,
) -> Result<()> {
    track.check(me)?;
    reg.publish_result(
        me,
        &[
            ("server_run", server_run),
            ("count", track.count),
            ("hash", track.hash),
        ],
    )?;
    println!(
        "main: Client {id}: verify ok: {} values, each above the previous one from its reply QP",
        track.count
    );
    Ok(())
}

/// The server side's check: waits (up to `wait`) for every client in `clients` that served
/// through one of `server_runs` to publish its result, then compares them with `counter`.
/// Returns the summary line.
pub fn check_totals(
    reg: &Registry,
    clients: &[String],
    server_runs: &[u64],
    counter: u64,
    wait: Duration,
) -> Result<String> {
    let deadline = Instant::now() + wait;
    let (mut count, mut hash, mut reported) = (0u64, 0u64, 0usize);
    for name in clients {
        let rec = loop {
            match reg.lookup_result(name)? {
                Some(r)
                    if r.get("server_run")
                        .is_some_and(|s| server_runs.contains(&s)) =>
                {
                    break Some(r)
                }
                _ if Instant::now() >= deadline => break None,
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        };
        let Some(rec) = rec else { continue };
        reported += 1;
        count += rec.get("count").unwrap_or(0);
        hash = hash.wrapping_add(rec.get("hash").unwrap_or(0));
    }
    if reported == 0 {
        return Err(Error::Verify(format!(
            "no client reported its values (handed out: {counter})"
        )));
    }
    if count != counter {
        return Err(Error::Verify(format!(
            "the counter handed out {counter} values but {reported} clients received {count} \
             (a client still running when the server stopped, or replies lost)"
        )));
    }
    if hash != hash_of_range(counter) {
        return Err(Error::Verify(format!(
            "the {count} values the clients received are not each of 0..{counter} exactly once"
        )));
    }
    Ok(format!(
        "main: verify ok: {counter} values handed out, each received exactly once by {reported} clients"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_hash_tells_a_duplicate_from_the_real_set() {
        let real = hash_of_range(1000);
        let mut dup = hash_of_range(999);
        dup = dup.wrapping_add(mix(5));
        assert_ne!(real, dup);
        let split = (0..500)
            .fold(0u64, |h, v| h.wrapping_add(mix(v)))
            .wrapping_add((500..1000).fold(0u64, |h, v| h.wrapping_add(mix(v))));
        assert_eq!(real, split);
    }

    #[test]
    fn tracker_flags_a_value_that_goes_back_on_one_qp_only() {
        let mut t = SeqTracker::default();
        t.record(1, 10);
        t.record(2, 5); // another QP may be behind
        t.record(1, 11);
        assert!(t.check("c").is_ok());
        t.record(2, 5);
        let e = t.check("client-0").unwrap_err().to_string();
        assert!(
            e.contains("value 5 from reply QP 0x2 is not greater"),
            "{e}"
        );
        assert_eq!(t.count, 4);
    }
}
