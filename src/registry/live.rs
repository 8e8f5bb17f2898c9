//! The liveness half of the registry: our entries expire unless refreshed, and peers we depend on
//! are watched, so that a killed run is noticed instead of connected to or waited for forever.
//!
//! memcached's own clock expires the keys, so no two machines' clocks are ever compared.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::Registry;
use crate::error::{Error, Result};

/// Seconds an entry (and its ready marker) lives unless its owner refreshes it.
pub const ENTRY_TTL_S: u32 = 6;
/// Seconds a done marker lives: long enough for passive peers to see it after we have left.
pub(crate) const DONE_TTL_S: u32 = 60;
/// How often the owner bumps its entries' heartbeat and pushes their expiry forward while it
/// waits in the registry, i.e. while peers may be watching the heartbeat to connect (a reader
/// watches for [`super::LIVE_WINDOW`], over two periods).
const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// The same from the report clock once setup is over: only the expiry matters then (three
/// chances per TTL), and the request runs on the posting thread of one-thread runs.
const REFRESH_RUNNING: Duration = Duration::from_secs(2);
/// How often watched peers are looked up.
const CHECK_EVERY: Duration = Duration::from_secs(2);
/// How often [`tend`] does anything at all (its callers tick every 100 ms). A look costs a
/// thousand-odd instructions (locks, clock reads, a list of handles) even when nothing is due;
/// at a quarter of the 2 s refresh and check periods they stay on time within 0.5 s.
const TEND_EVERY_NS: u64 = 500_000_000;
/// How long a watched peer's entry may be missing before the peer counts as gone: a live
/// process whose heartbeat is late (its CPUs oversubscribed, its link flapping, the registry
/// restarted) publishes it again within this.
pub const GRACE: Duration = Duration::from_secs(2 * ENTRY_TTL_S as u64);
/// How long the heartbeat's requests wait for an answer (they may run on a posting thread).
const TEND_ANSWER: Duration = super::QUICK_ANSWER;
/// While the registry does not answer, how often it is tried again.
const OUTAGE_RETRY: Duration = Duration::from_secs(3);

/// When [`tend`] next has work to look for, in ns since [`epoch`]: one atomic load decides
/// the common case without a lock, an allocation or a registry round trip.
static NEXT_TEND_NS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Every registry handle of this process, for [`tend`].
static REGISTRIES: Mutex<Vec<Weak<Registry>>> = Mutex::new(Vec::new());

/// A handle's refresh clock and the peers it watches.
#[derive(Default)]
pub(crate) struct Tending {
    last_refresh: Option<Instant>,
    last_check: Option<Instant>,
    next_watch: u64,
    watched: Vec<Watched>,
    /// Since when this registry has not answered [`tend`], and when to try it again.
    outage: Option<(Instant, Instant)>,
}

#[derive(Clone)]
struct Watched {
    id: u64,
    peer: String,
    run: u64,
    /// Whose done marker means the peer left on purpose.
    done_of: String,
    /// Since when its entry has been missing, if it is.
    missing_since: Option<Instant>,
}

pub(crate) fn enlist(r: &Arc<Registry>) {
    let mut all = REGISTRIES.lock().unwrap_or_else(|p| p.into_inner());
    all.retain(|w| w.strong_count() > 0);
    all.push(Arc::downgrade(r));
}

/// Every live registry handle of this process.
pub(crate) fn registries() -> Vec<Arc<Registry>> {
    REGISTRIES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect()
}

fn tending(r: &Registry) -> std::sync::MutexGuard<'_, Tending> {
    r.tending.lock().unwrap_or_else(|p| p.into_inner())
}

/// Bumps the heartbeat of `r`'s entries and pushes their expiry forward when a refresh is due
/// (every second: the registry's own waits call this).
pub(crate) fn refresh_if_due(r: &Registry) -> Result<()> {
    refresh_every(r, REFRESH_EVERY)
}

fn refresh_every(r: &Registry, period: Duration) -> Result<()> {
    {
        let mut t = tending(r);
        if t.last_refresh.is_some_and(|l| l.elapsed() < period) {
            return Ok(());
        }
        t.last_refresh = Some(Instant::now());
    }
    r.refresh()
}

/// What one [`tend`] found.
#[derive(Debug)]
pub enum Tended {
    /// Nothing to say.
    Fine,
    /// The registry answers again, after not answering for this long.
    Back(Duration),
    /// The registry does not answer (`first`: this outage began now). Not a peer's loss: the
    /// run's own traffic says whether its peers live.
    Unreachable {
        /// What failed.
        error: Error,
        /// The first failure of this outage.
        first: bool,
    },
    /// A watched peer is gone ([`Error::PeerLost`], saying how it was noticed): it left a
    /// failure marker, its entry was replaced by another run's, or its entry has been missing
    /// for [`GRACE`] without a done marker.
    PeerGone(Error),
}

/// Refreshes the entries of every registry handle in this process when due, and looks up the
/// peers they watch, at `now` (the caller's clock read). Cheap when nothing is due (one atomic
/// load; it looks at most every 500 ms): the report clock calls it on every tick. The heartbeat is sent without
/// waiting for memcached's answer; the checks wait [`TEND_ANSWER`] at most, and while the
/// registry does not answer they are tried every [`OUTAGE_RETRY`] only.
pub fn tend(now: Instant) -> Tended {
    let now = now.saturating_duration_since(epoch()).as_nanos() as u64;
    if now < NEXT_TEND_NS.load(Ordering::Relaxed) {
        return Tended::Fine;
    }
    NEXT_TEND_NS.store(now + TEND_EVERY_NS, Ordering::Relaxed);
    let mut said = Tended::Fine;
    for r in registries() {
        let outage = tending(&r).outage;
        if outage.is_some_and(|(_, retry)| Instant::now() < retry) {
            continue;
        }
        match refresh_every(&r, REFRESH_RUNNING).and_then(|()| check_peers(&r)) {
            Err(error) => {
                let since = outage.map_or_else(Instant::now, |(since, _)| since);
                tending(&r).outage = Some((since, Instant::now() + OUTAGE_RETRY));
                said = Tended::Unreachable {
                    error,
                    first: outage.is_none(),
                };
            }
            Ok(found) => {
                tending(&r).outage = None;
                if let Some(gone) = found {
                    return gone;
                }
                if let Some((since, _)) = outage {
                    said = Tended::Back(since.elapsed());
                }
            }
        }
    }
    said
}

/// Looks up `r`'s watched peers when due: Err when the registry does not answer, a
/// [`Tended::PeerGone`] for the first peer found gone.
fn check_peers(r: &Registry) -> Result<Option<Tended>> {
    let watched = {
        let mut t = tending(r);
        if t.watched.is_empty() || t.last_check.is_some_and(|l| l.elapsed() < CHECK_EVERY) {
            return Ok(None);
        }
        t.last_check = Some(Instant::now());
        t.watched.clone()
    };
    for w in watched {
        let gone = |what: String| {
            Ok(Some(Tended::PeerGone(Error::PeerLost {
                peer: w.peer.clone(),
                what,
            })))
        };
        if let Some(reason) = r.failure_of(w.run, TEND_ANSWER)? {
            return gone(format!("it failed: {reason}"));
        }
        let entry = r.lookup_within(&w.peer, TEND_ANSWER)?;
        let missing_since = match entry {
            Some(e) if e.run_id == w.run => None,
            _ if r.done_within(&w.done_of, w.run, TEND_ANSWER)? => None,
            Some(_) => {
                return gone(
                    "its registry entry was replaced by another run's (it was restarted)".into(),
                )
            }
            None => Some(w.missing_since.unwrap_or_else(Instant::now)),
        };
        if let Some(since) = missing_since.filter(|s| s.elapsed() >= GRACE) {
            return gone(format!(
                "its registry entry expired {:.0} s ago, did not come back and left no done \
                     marker (killed, or hung for more than {:.0} s)",
                since.elapsed().as_secs_f64(),
                since.elapsed().as_secs_f64() + f64::from(ENTRY_TTL_S)
            ));
        }
        if let Some(slot) = tending(r).watched.iter_mut().find(|x| x.id == w.id) {
            slot.missing_since = missing_since;
        }
    }
    Ok(None)
}

/// While this lives, [`tend`] checks that `peer` (of run `run`) is alive.
pub struct PeerWatch {
    reg: Arc<Registry>,
    id: u64,
}

impl Registry {
    /// Watches `peer`, whose entry came from run `run`, until the returned guard is dropped. The
    /// peer may leave once `done_of`'s done marker (from the same run) is up.
    pub fn watch(self: &Arc<Self>, peer: &str, run: u64, done_of: &str) -> PeerWatch {
        let mut t = tending(self);
        t.next_watch += 1;
        let id = t.next_watch;
        t.watched.push(Watched {
            id,
            peer: peer.to_string(),
            run,
            done_of: done_of.to_string(),
            missing_since: None,
        });
        PeerWatch {
            reg: Arc::clone(self),
            id,
        }
    }
}

impl Drop for PeerWatch {
    fn drop(&mut self) {
        tending(&self.reg).watched.retain(|w| w.id != self.id);
    }
}
