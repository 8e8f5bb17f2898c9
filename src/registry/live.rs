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
/// How often [`tend`] does anything at all (its callers tick every 50 ms).
const TEND_EVERY_NS: u64 = 250_000_000;

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
}

#[derive(Clone)]
struct Watched {
    id: u64,
    peer: String,
    run: u64,
    /// Whose done marker means the peer left on purpose.
    done_of: String,
}

pub(crate) fn enlist(r: &Arc<Registry>) {
    let mut all = REGISTRIES.lock().unwrap_or_else(|p| p.into_inner());
    all.retain(|w| w.strong_count() > 0);
    all.push(Arc::downgrade(r));
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

/// Refreshes the entries of every registry handle in this process when due, and looks up the
/// peers they watch. An error names a watched peer that is gone: its entry expired or was
/// replaced, and its run left no done marker. Cheap when nothing is due (a clock read and one
/// atomic load; it looks at most every 250 ms): the report clock calls it on every tick. The
/// heartbeat is sent without waiting for memcached's answer.
pub fn tend() -> Result<()> {
    let now = epoch().elapsed().as_nanos() as u64;
    if now < NEXT_TEND_NS.load(Ordering::Relaxed) {
        return Ok(());
    }
    NEXT_TEND_NS.store(now + TEND_EVERY_NS, Ordering::Relaxed);
    let regs: Vec<Arc<Registry>> = REGISTRIES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for r in regs {
        refresh_every(&r, REFRESH_RUNNING)?;
        check_peers(&r)?;
    }
    Ok(())
}

fn check_peers(r: &Registry) -> Result<()> {
    let watched = {
        let mut t = tending(r);
        if t.watched.is_empty() || t.last_check.is_some_and(|l| l.elapsed() < CHECK_EVERY) {
            return Ok(());
        }
        t.last_check = Some(Instant::now());
        t.watched.clone()
    };
    for w in watched {
        let alive = r.lookup(&w.peer)?.is_some_and(|e| e.run_id == w.run);
        if !alive && !r.is_ready(&format!("{}-done", w.done_of), Some(w.run))? {
            return Err(Error::PeerLost {
                peer: w.peer,
                what: format!(
                    "its registry entry expired or was replaced without a done marker (killed, or \
                     hung for more than {ENTRY_TTL_S} s)"
                ),
            });
        }
    }
    Ok(())
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
