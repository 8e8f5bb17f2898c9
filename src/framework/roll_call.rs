//! A server told how many peers to expect (`--num-clients N`) meets them in order. When the wait
//! ends before all came — a stop (run-local.sh's, or Ctrl-C) or `--connect-timeout` — it says
//! which came and which did not, and the run exits 5 ([`Error::Incomplete`]), not 130.

use crate::error::Error;

/// The peers a server expects, and how many came so far.
#[derive(Debug, Clone)]
pub struct RollCall {
    noun: &'static str,
    flag: &'static str,
    expected: usize,
    came: usize,
}

impl RollCall {
    /// `expected` peers called `noun` (`client`), as `flag` (`--num-clients`) asked.
    pub fn new(noun: &'static str, flag: &'static str, expected: usize) -> RollCall {
        RollCall {
            noun,
            flag,
            expected,
            came: 0,
        }
    }

    /// The next peer (in order) came.
    pub fn came(&mut self) {
        self.came += 1;
    }

    /// What an error of the wait for the next peer means: a stop or a timeout says who did not
    /// come (exit 5); any other error is itself.
    pub fn missing(&self, e: Error) -> Error {
        if !(matches!(e, Error::Stopped(_)) || e.is_timeout()) {
            return e;
        }
        let (n, came, noun) = (self.expected, self.came, self.noun);
        let span = |from: usize, to: usize| match to - from {
            1 => format!("{noun} {from}"),
            _ => format!("{noun}s {from}..{}", to - 1),
        };
        let who = match came {
            0 => "none".to_string(),
            c => span(0, c),
        };
        Error::Incomplete(format!(
            "{came} of {n} {noun}s came ({who}); {} did not ({e}): start them, or run with {} {}",
            span(came, n),
            self.flag,
            came.max(1)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_names_who_did_not_come() {
        let mut r = RollCall::new("client", "--num-clients", 32);
        r.came();
        let e = r.missing(Error::Stopped(
            "stopped while waiting for client-1-0".into(),
        ));
        assert_eq!(e.exit_code(), 5);
        assert_eq!(
            e.to_string(),
            "1 of 32 clients came (client 0); clients 1..31 did not (stopped while waiting for \
             client-1-0): start them, or run with --num-clients 1"
        );
        let mut two = RollCall::new("client", "--num-clients", 3);
        two.came();
        two.came();
        let e = two.missing(Error::timeout(
            "client-2 did not appear",
            std::time::Duration::from_secs(60),
            None,
        ));
        assert!(e.to_string().starts_with("2 of 3 clients came (clients 0..1); client 2 did not (client-2 did not appear within 60 s)"), "{e}");
        // Other errors stay what they are.
        let e = two.missing(Error::Verify("x".into()));
        assert_eq!(e.exit_code(), 4);
    }
}
