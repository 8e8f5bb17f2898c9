//! Meeting peers: waiting for a live entry, the rendezvous of connected QPs, UD announcements.

use super::{
    live, Entry, Registry, WaitOptions, ENTRY_TTL_S, LIVE_WINDOW, POLL_INTERVAL, QUICK_ANSWER,
};
use crate::error::{Error, Result};
use crate::verbs::QpInfo;
use std::time::Instant;

impl Registry {
    /// Waits for `name`'s entry and for proof that its owner is alive: its heartbeat moving within
    /// [`LIVE_WINDOW`]. An entry whose heartbeat stands still (a killed run's, not yet expired) is
    /// named on stderr and waited past, until it expires or a live one replaces it.
    pub fn wait_live(&self, name: &str, opts: WaitOptions) -> Result<Entry> {
        let deadline = Instant::now() + opts.timeout;
        let left = || WaitOptions {
            timeout: deadline.saturating_duration_since(Instant::now()),
            ..opts
        };
        // The run whose entry went away while we watched it: if it left a failure marker (it
        // failed in its setup, say), waiting on for a new entry would only wait out the timeout.
        let mut vanished: Option<u64> = None;
        loop {
            let first = match vanished {
                None => self.wait_for(name, left())?,
                Some(run) => self.wait(name, left(), |r| {
                    r.check_not_failed(name, run)?;
                    Ok(r.lookup(name)?
                        .filter(|e| opts.published_after_ms.is_none_or(|t| e.published_ms >= t)))
                })?,
            };
            let seen = Instant::now();
            let mut stale = true;
            while seen.elapsed() < LIVE_WINDOW {
                std::thread::sleep(POLL_INTERVAL);
                live::refresh_if_due(self)?;
                if opts.stop.is_some_and(|a| a.stop_requested()) {
                    return Err(Error::Stopped(format!("stopped while waiting for {name}")));
                }
                match self.lookup(name)? {
                    Some(now) if now.run_id == first.run_id && now.info == first.info => {
                        if now.beat != first.beat {
                            return Ok(now);
                        }
                    }
                    // Replaced (a new run) or gone: look at the new one from the start.
                    now => {
                        if now.is_none() {
                            self.check_not_failed(name, first.run_id)?;
                            vanished = Some(first.run_id);
                        }
                        stale = false;
                        break;
                    }
                }
            }
            if stale {
                eprintln!(
                    "{name}'s registry entry (run {:016x}, qpn {:#x}) is stale: its heartbeat \
                     stood still for {} (a killed run's? it expires within {ENTRY_TTL_S} s); \
                     waiting for a live one",
                    first.run_id,
                    first.info.qpn,
                    crate::error::fmt_secs(LIVE_WINDOW)
                );
                self.wait_replaced(name, &first, left())?;
            }
        }
    }

    /// Waits until the entry under `name` is gone or differs from `old` (a stale entry expiring
    /// or being replaced by a live one).
    pub fn wait_replaced(&self, name: &str, old: &Entry, opts: WaitOptions) -> Result<()> {
        self.wait(&format!("{name} (a new entry)"), opts, |r| {
            Ok(r.lookup(name)?.is_none_or(|e| e != *old).then_some(()))
        })
    }

    /// Meets the connected peer `peer`: publishes `info` as `me`, waits for `peer`'s entry, runs
    /// `connect` on it (bring the QP to RTS there, and post what the peer's first message needs),
    /// marks `me` ready, and waits until `peer` is marked ready by the same run as the entry we
    /// connected to. Returns the peer's entry. The entry may still be a killed run's that has not
    /// expired yet: check the connection itself before trusting it.
    pub fn rendezvous(
        &self,
        me: &str,
        peer: &str,
        info: &QpInfo,
        wait: WaitOptions,
        connect: impl FnOnce(&QpInfo) -> Result<()>,
    ) -> Result<Entry> {
        self.publish(me, info)?;
        let remote = self.wait_live(peer, wait).map_err(stale_hint)?;
        self.connected(connect(&remote.info))?;
        self.publish_ready(me)?;
        // Ready from the same run, and since the entry we connected to: a marker left by the
        // peer's earlier attempt (before it reconnected) does not count.
        self.wait(&format!("{peer} (ready)"), wait, |r| {
            r.check_not_failed(peer, remote.run_id)?;
            r.ready_run(peer, Some(remote.run_id), remote.published_ms)
        })
        .map_err(stale_hint)?;
        Ok(remote)
    }

    /// A connect that failed (it refused the peer's MTU or GID, say) leaves its reason as our
    /// failure marker before our entries go, so that the peer, waiting for us to be ready,
    /// ends at once with why instead of waiting out its connect timeout.
    fn connected(&self, r: Result<()>) -> Result<()> {
        if let Err(e) = &r {
            let _ = self.publish_failure(&e.to_string());
        }
        r
    }

    /// [`Error::PeerLost`] when `peer`'s run `run` left a failure marker: it failed (its setup
    /// refused what it found, say) and will not come.
    fn check_not_failed(&self, peer: &str, run: u64) -> Result<()> {
        match self.failure_of(run, QUICK_ANSWER)? {
            Some(reason) => Err(Error::PeerLost {
                peer: peer.to_string(),
                what: format!("it failed: {reason}"),
            }),
            None => Ok(()),
        }
    }

    /// Waits for the live entries of every name in `names` together: each must appear, then its
    /// heartbeat must move, all watched in the same [`LIVE_WINDOW`] (so meeting many peers costs
    /// one window, not one per peer). A stale or replaced entry falls back to [`wait_live`]'s
    /// rules for that name.
    ///
    /// [`wait_live`]: Self::wait_live
    pub fn wait_live_all(&self, names: &[String], opts: WaitOptions) -> Result<Vec<Entry>> {
        let deadline = Instant::now() + opts.timeout;
        let left = || WaitOptions {
            timeout: deadline.saturating_duration_since(Instant::now()),
            ..opts
        };
        let mut first = Vec::with_capacity(names.len());
        for name in names {
            first.push(self.wait_for(name, left())?);
        }
        let mut live: Vec<Option<Entry>> = vec![None; names.len()];
        let mut recheck = vec![false; names.len()];
        let seen = Instant::now();
        while seen.elapsed() < LIVE_WINDOW
            && live.iter().zip(&recheck).any(|(l, r)| l.is_none() && !r)
        {
            std::thread::sleep(POLL_INTERVAL);
            live::refresh_if_due(self)?;
            if opts.stop.is_some_and(|a| a.stop_requested()) {
                return Err(Error::Stopped("stopped while waiting for peers".into()));
            }
            for (i, name) in names.iter().enumerate() {
                if live[i].is_some() || recheck[i] {
                    continue;
                }
                match self.lookup(name)? {
                    Some(now) if now.run_id == first[i].run_id && now.info == first[i].info => {
                        if now.beat != first[i].beat {
                            live[i] = Some(now);
                        }
                    }
                    _ => recheck[i] = true,
                }
            }
        }
        names
            .iter()
            .zip(live)
            .map(|(name, l)| match l {
                Some(e) => Ok(e),
                None => self.wait_live(name, left()),
            })
            .collect()
    }

    /// Meets many connected peers at once. For each [`Meeting`]: publishes our entry (all
    /// before any wait), waits for the peers' live entries together ([`wait_live_all`]), runs
    /// `connect(i, peer)` (bring QP `i` to RTS, post what the peer's first message needs), marks
    /// our side ready, and finally waits until every peer is marked ready by the run we connected
    /// to. Unlike [`rendezvous`] called in a loop, the parties need no common order: a process
    /// meeting many others never waits on one that is itself waiting on a third.
    ///
    /// [`wait_live_all`]: Self::wait_live_all
    /// [`rendezvous`]: Self::rendezvous
    pub fn rendezvous_all(
        &self,
        meetings: &[Meeting],
        wait: WaitOptions,
        mut connect: impl FnMut(usize, &QpInfo) -> Result<()>,
    ) -> Result<Vec<Entry>> {
        for m in meetings {
            self.publish(&m.me, &m.info)?;
        }
        let peers: Vec<String> = meetings.iter().map(|m| m.peer.clone()).collect();
        let remotes = self.wait_live_all(&peers, wait).map_err(stale_hint)?;
        for (i, (m, remote)) in meetings.iter().zip(&remotes).enumerate() {
            self.connected(connect(i, &remote.info))?;
            self.publish_ready(&m.me)?;
        }
        for (m, remote) in meetings.iter().zip(&remotes) {
            self.wait(&format!("{} (ready)", m.peer), wait, |r| {
                r.check_not_failed(&m.peer, remote.run_id)?;
                r.ready_run(&m.peer, Some(remote.run_id), remote.published_ms)
            })
            .map_err(stale_hint)?;
        }
        Ok(remotes)
    }

    /// Publishes a UD QP (`info`, already able to receive) and marks it ready in one step.
    pub fn announce(&self, me: &str, info: &QpInfo) -> Result<()> {
        self.publish(me, info)?;
        self.publish_ready(me)
    }

    /// Waits for a UD peer's entry and for its readiness from the same run.
    pub fn find_ready(&self, peer: &str, wait: WaitOptions) -> Result<Entry> {
        let remote = self.wait_live(peer, wait).map_err(stale_hint)?;
        self.wait_ready(peer, wait, Some(remote.run_id))
            .map_err(stale_hint)?;
        Ok(remote)
    }
}

/// One connection of [`Registry::rendezvous_all`]: our QP's name and attributes, and the name of
/// the peer QP it connects to.
#[derive(Debug, Clone)]
pub struct Meeting {
    /// Our entry's name.
    pub me: String,
    /// The peer's entry's name.
    pub peer: String,
    /// What our entry publishes.
    pub info: QpInfo,
}

/// A wait that timed out may have been a stale entry's doing: say what to check, keep the kind.
fn stale_hint(e: Error) -> Error {
    match e {
        Error::Timeout { what, after, .. } => Error::Timeout {
            what,
            after,
            hint: Some("is the peer running, with the same --run-name?"),
        },
        other => other,
    }
}
