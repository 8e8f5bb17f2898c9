//! Failure markers: a run that fails says why under its run id (`failed-<run id>`), so that a
//! peer watching it (a passive side, which has no traffic of its own to notice the loss with)
//! ends at once with the reason — "peer client-0 failed: work completion error: transport retry
//! counter exceeded …" — instead of waiting for its entry to expire.

use std::time::{Duration, Instant};

use super::live::{registries, DONE_TTL_S};
use super::Registry;
use crate::error::Result;

/// How long a failing run keeps trying to leave its marker (a link that flapped comes back).
const PUBLISH_FOR: Duration = Duration::from_secs(5);

/// The longest reason kept (memcached values are small; the first line says enough).
const MAX_REASON: usize = 900;

impl Registry {
    fn failure_key(&self, run: u64) -> Result<String> {
        self.key(&format!("failed-{run:016x}"))
    }

    /// The reason run `run` failed, if it left one.
    pub(crate) fn failure_of(&self, run: u64, within: Duration) -> Result<Option<String>> {
        let key = self.failure_key(run)?;
        let v = self.with_conn_within(within, |c| c.get(&key), "looking up a failure marker")?;
        Ok(v.map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    pub(super) fn publish_failure(&self, reason: &str) -> Result<()> {
        let key = self.failure_key(self.run_id())?;
        let mut end = reason.len().min(MAX_REASON);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        self.with_conn(
            |c| c.set(&key, &reason.as_bytes()[..end], DONE_TTL_S),
            "leaving a failure marker",
        )
    }
}

/// Leaves `reason` in every registry this process uses, trying for a few seconds when the
/// registry does not answer; gives up quietly (the peers then notice by their own means).
pub fn publish_failure(reason: &str) {
    let start = Instant::now();
    for r in registries() {
        while r.publish_failure(reason).is_err() && start.elapsed() < PUBLISH_FOR {
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}
