//! Markers: "ready" (set once a QP is connected, refreshed with the entries) and "done" (set once
//! at the end, outliving its owner for a minute), each carrying the run id that set it.

use std::time::Duration;

use super::{
    is_outage, live, now_ms, Entry, Registry, WaitOptions, ANSWER_TIMEOUT, ENTRY_TTL_S,
    QUICK_ANSWER,
};
use crate::error::Result;

impl Registry {
    /// Marks `name` ready (expiring with the entry unless refreshed).
    pub fn publish_ready(&self, name: &str) -> Result<()> {
        let key = self.ready_key(name)?;
        let value = format!("ready {:016x} {}", self.run_id, now_ms());
        self.with_conn(
            |c| c.set(&key, value.as_bytes(), ENTRY_TTL_S),
            &format!("marking {name} ready"),
        )?;
        self.remember(&key, None);
        Ok(())
    }

    /// Marks `name` finished for good: the marker is not refreshed and not deleted on exit (it
    /// expires after [`live::DONE_TTL_S`]), so peers that look after this process has left still
    /// see it.
    pub fn publish_done(&self, name: &str) -> Result<()> {
        let key = self.ready_key(&format!("{name}-done"))?;
        let value = format!("ready {:016x} {}", self.run_id, now_ms());
        self.with_conn(
            |c| c.set(&key, value.as_bytes(), live::DONE_TTL_S),
            &format!("marking {name} done"),
        )
    }

    /// Waits until `name` is marked ready, by the run `expect_run` if given (markers of other runs,
    /// e.g. a killed earlier one, are ignored); returns the marking run's id.
    pub fn wait_ready(
        &self,
        name: &str,
        opts: WaitOptions,
        expect_run: Option<u64>,
    ) -> Result<u64> {
        self.wait(&format!("{name} (ready)"), opts, |r| {
            r.ready_run(name, expect_run, 0)
        })
    }

    /// Whether `name` is marked ready (by `expect_run`, if given) right now: false also while
    /// the registry does not answer (what the measuring loops that ask this want: the report
    /// clock says the registry is out, and they look again later). A malformed name is an error.
    pub fn is_ready(&self, name: &str, expect_run: Option<u64>) -> Result<bool> {
        // A quick answer or none: the caller polls from its measuring loop.
        match self.ready_run_within(name, expect_run, 0, QUICK_ANSWER) {
            Ok(run) => Ok(run.is_some()),
            Err(e) if is_outage(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The entry under `name` now, if there is one and the registry answers (see
    /// [`Registry::is_ready`]).
    pub fn lookup_now(&self, name: &str) -> Result<Option<Entry>> {
        match self.lookup_within(name, QUICK_ANSWER) {
            Err(e) if is_outage(&e) => Ok(None),
            r => r,
        }
    }

    /// Whether `name`'s done marker from run `run` is up; an error when the registry does not
    /// answer within `within` (the heartbeat's check, which must tell an outage from "no").
    pub(crate) fn done_within(&self, name: &str, run: u64, within: Duration) -> Result<bool> {
        let key = self.ready_key(&format!("{name}-done"))?;
        let v =
            self.with_conn_within(within, |c| c.get(&key), &format!("looking up {name}-done"))?;
        Ok(v.is_some_and(|v| marker_run(&v, 0) == Some(run)))
    }

    /// The run that marked `name` ready, if it is `expect_run` (when given) and marked it at or
    /// after `not_before_ms` (its clock: the marker and the entry come from the same process).
    pub(crate) fn ready_run(
        &self,
        name: &str,
        expect_run: Option<u64>,
        not_before_ms: u64,
    ) -> Result<Option<u64>> {
        self.ready_run_within(name, expect_run, not_before_ms, ANSWER_TIMEOUT)
    }

    /// [`Registry::ready_run`], the answer awaited for `within` at most.
    fn ready_run_within(
        &self,
        name: &str,
        expect_run: Option<u64>,
        not_before_ms: u64,
        within: Duration,
    ) -> Result<Option<u64>> {
        let key = self.ready_key(name)?;
        let v = self.with_conn_within(
            within,
            |c| c.get(&key),
            &format!("looking up {name} (ready)"),
        )?;
        Ok(v.and_then(|v| marker_run(&v, not_before_ms))
            .filter(|run| expect_run.is_none_or(|e| e == *run)))
    }
}

/// The run of a marker value (`ready <run> <ms>`) set at or after `not_before_ms`.
fn marker_run(v: &[u8], not_before_ms: u64) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    let mut f = s.strip_prefix("ready ")?.split(' ');
    let run = u64::from_str_radix(f.next()?, 16).ok()?;
    let ms: u64 = f.next()?.parse().ok()?;
    (ms >= not_before_ms).then_some(run)
}
