//! QP-info exchange. [`Registry`]: memcached, with libhrd's key names (`server-<i>`, `client-<i>`,
//! `master-<port>-<clt>`…), so it fits the C suite's run scripts (memcached on the server machine,
//! `HRD_REGISTRY_IP`). (perftest's tools exchange their keys over perftest's own TCP channel:
//! `perf::channel`.)
//!
//! Entries are live only while their owner is: they are written with a short expiry
//! ([`ENTRY_TTL_S`]) and re-published with a bumped heartbeat by the owner about once a second
//! while it waits and runs ([`tend`]), so a killed run's entries vanish on their own, and before
//! that a peer sees their heartbeat stand still ([`Registry::wait_live`]) and never connects to
//! them. `--run-name` prefixes every key, so several experiments share
//! one memcached.
//!
//! Meeting a peer is one call: [`Registry::rendezvous`] (connected QPs: publish, wait for the peer,
//! connect, mark ready, wait for the peer's readiness from the same run), [`Registry::announce`]
//! and [`Registry::find_ready`] (UD: a receiver announces itself, a sender looks it up).

mod failure;
mod live;
mod markers;
mod meet;
mod memcached;
mod result;
mod wire;

pub use failure::publish_failure;
pub use live::{tend, PeerWatch, Tended, ENTRY_TTL_S, GRACE};
pub use meet::Meeting;
pub use result::ResultRecord;
pub use wire::{decode, encode, Entry, VALUE_LEN};

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::verbs::QpInfo;
use memcached::Conn;

/// memcached's port, as libhrd uses it.
pub const DEFAULT_PORT: u16 = 11211;
/// Prefix of readiness markers (libhrd keeps a reserved prefix for the same purpose).
pub const READY_PREFIX: &str = "__rdma_bench_ready__";
/// How often a waiting peer looks again (libhrd: 200 ms).
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Where the registry is: `--registry HOST[:PORT]`, else `HRD_REGISTRY_IP`, else 127.0.0.1.
pub fn registry_address(flag: Option<&str>) -> Result<(Vec<SocketAddr>, String)> {
    let spec = match flag {
        Some(s) => s.to_string(),
        None => std::env::var("HRD_REGISTRY_IP").unwrap_or_else(|_| "127.0.0.1".to_string()),
    };
    let with_port = if spec.parse::<std::net::Ipv6Addr>().is_ok() {
        format!("[{spec}]:{DEFAULT_PORT}")
    } else if spec.contains(':') {
        spec.clone()
    } else {
        format!("{spec}:{DEFAULT_PORT}")
    };
    let addrs: Vec<SocketAddr> = with_port
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    if addrs.is_empty() {
        return Err(Error::config(format!(
            "registry address '{spec}' is not HOST[:PORT] or does not resolve"
        )));
    }
    Ok((addrs, with_port))
}

/// How long and how visibly to wait for a peer's key.
#[derive(Debug, Clone, Copy)]
pub struct WaitOptions {
    /// Give up after this long.
    pub timeout: Duration,
    /// Say "waiting for …" this often.
    pub announce_every: Duration,
    /// Ignore entries published before this Unix time in ms (a previous run's leftovers).
    pub published_after_ms: Option<u64>,
    /// Asked between probes: a stop ends the wait with [`Error::Stopped`] (e.g. on SIGINT).
    pub stop: Option<crate::control::Attention>,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            timeout: Duration::from_secs(60),
            announce_every: Duration::from_secs(3),
            published_after_ms: None,
            stop: None,
        }
    }
}

/// How long a reader watches an entry's heartbeat before calling it stale (the owner bumps it
/// about once a second).
pub const LIVE_WINDOW: Duration = Duration::from_millis(2500);

/// How long a request may go unanswered before the registry counts as silent.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// The same for the requests made from a measuring loop or the heartbeat (they may run on a
/// posting thread, and an outage must not stall the report clock).
pub(crate) const QUICK_ANSWER: Duration = Duration::from_secs(1);

/// A connection to the registry, shared as an `Arc`. Keys published through it expire unless
/// refreshed ([`tend`]) and are deleted when the last handle is dropped.
pub struct Registry {
    addr: String,
    sock: SocketAddr,
    /// None after a failed request (its answer may still come and would be read as the next
    /// one's): the next request connects again.
    conn: Mutex<Option<Conn>>,
    run_id: u64,
    /// `--run-name` and a separator, or empty: prefixes every key.
    prefix: String,
    /// Keys this handle keeps alive: entries (re-published with the next heartbeat) and markers
    /// (touched).
    published: Mutex<Vec<(String, Option<Entry>)>>,
    pub(crate) tending: Mutex<live::Tending>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > 250 || key.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(Error::config(format!(
            "'{key}' is not a valid registry name (1-250 bytes, no spaces)"
        )));
    }
    Ok(())
}

impl Registry {
    /// Connects; an unreachable, silent or foreign server is reported at once, never retried.
    pub fn connect(flag: Option<&str>) -> Result<Arc<Registry>> {
        Self::connect_named(flag, None)
    }

    /// Connects with every key prefixed by `run_name` (`--run-name`), so that independent runs
    /// share one memcached without seeing each other's entries.
    pub fn connect_named(flag: Option<&str>, run_name: Option<&str>) -> Result<Arc<Registry>> {
        let (addrs, shown) = registry_address(flag)?;
        let prefix = match run_name {
            Some(n) => {
                check_key(n).map_err(|_| {
                    Error::config(format!("run name '{n}' must be 1-250 bytes without spaces"))
                })?;
                format!("{n}:")
            }
            None => String::new(),
        };
        // Every address the name resolves to, in the resolver's order (a host with an IPv6
        // and an IPv4 address may run memcached on one only); the first that answers is kept.
        let mut last = Err(std::io::Error::other("no address"));
        for &a in &addrs {
            last = Conn::connect(a, Duration::from_secs(2), ANSWER_TIMEOUT).map(|c| (c, a));
            if last.is_ok() {
                break;
            }
        }
        let (conn, addr) = last.map_err(|e| {
            if is_silence(&e) {
                silent(&shown, "answering its version request")
            } else {
                Error::Registry {
                    addr: shown.clone(),
                    what: "cannot connect".into(),
                    source: e,
                    hint: Some("start memcached there, or set --registry / HRD_REGISTRY_IP"),
                }
            }
        })?;
        // Unique enough per process: time, pid and an address from this run's heap.
        let salt = Box::new(0u8);
        let run_id =
            now_ms() ^ (u64::from(std::process::id()) << 40) ^ ((&*salt as *const u8 as u64) << 8);
        let reg = Arc::new(Registry {
            addr: shown,
            sock: addr,
            conn: Mutex::new(Some(conn)),
            run_id,
            prefix,
            published: Mutex::new(Vec::new()),
            tending: Mutex::new(live::Tending::default()),
        });
        live::enlist(&reg);
        Ok(reg)
    }

    /// `HOST:PORT` of the registry, for messages.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// This process's run id, carried in every entry it publishes.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    pub(crate) fn key(&self, name: &str) -> Result<String> {
        let k = format!("{}{name}", self.prefix);
        check_key(&k)?;
        Ok(k)
    }

    pub(crate) fn ready_key(&self, name: &str) -> Result<String> {
        self.key(&format!("{READY_PREFIX}{name}"))
    }

    fn io_err(&self, what: &str, e: std::io::Error) -> Error {
        if is_silence(&e) {
            return silent(&self.addr, what);
        }
        Error::Registry {
            addr: self.addr.clone(),
            what: what.to_string(),
            source: e,
            hint: None,
        }
    }

    /// Runs one request on the connection, connecting again first if the last request failed
    /// (a registry that was down, or restarted, is used again once it answers).
    pub(crate) fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> std::io::Result<T>,
        what: &str,
    ) -> Result<T> {
        let mut slot = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            // Quickly or not at all: this may run on a posting thread during an outage.
            let c = Conn::connect(self.sock, QUICK_ANSWER, QUICK_ANSWER)
                .and_then(|mut c| c.answer_within(ANSWER_TIMEOUT).map(|()| c))
                .map_err(|e| self.io_err(&format!("{what} (connecting again)"), e))?;
            *slot = Some(c);
        }
        let conn = slot.as_mut().expect("connected above");
        let r = f(conn);
        if r.is_err() {
            *slot = None;
        }
        r.map_err(|e| self.io_err(what, e))
    }

    /// [`Registry::with_conn`] with answers awaited for `within` only (the heartbeat's checks
    /// from a posting thread must not stall it for the usual five seconds).
    pub(crate) fn with_conn_within<T>(
        &self,
        within: Duration,
        f: impl FnOnce(&mut Conn) -> std::io::Result<T>,
        what: &str,
    ) -> Result<T> {
        self.with_conn(
            |c| {
                c.answer_within(within)?;
                let r = f(c);
                c.answer_within(ANSWER_TIMEOUT)?;
                r
            },
            what,
        )
    }

    fn remember(&self, key: &str, entry: Option<Entry>) {
        let mut p = self.published.lock().unwrap_or_else(|p| p.into_inner());
        match p.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = entry,
            None => p.push((key.to_string(), entry)),
        }
    }

    /// Re-publishes every entry of this handle with its heartbeat bumped, and pushes the expiry
    /// of its markers forward.
    pub(crate) fn refresh(&self) -> Result<()> {
        let keys: Vec<(String, Option<Entry>)> = self
            .published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for (key, entry) in keys {
            match entry {
                Some(mut e) => {
                    e.beat = e.beat.wrapping_add(1);
                    self.with_conn(
                        |c| c.set_noreply(&key, &encode(&e), ENTRY_TTL_S),
                        "refreshing our entries",
                    )?;
                    self.remember(&key, Some(e));
                }
                None => {
                    self.with_conn(
                        |c| c.touch_noreply(&key, ENTRY_TTL_S),
                        "refreshing our markers",
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Publishes `info` under `name` (overwriting a stale entry), expiring unless refreshed.
    pub fn publish(&self, name: &str, info: &QpInfo) -> Result<()> {
        let key = self.key(name)?;
        let entry = Entry {
            info: *info,
            run_id: self.run_id,
            published_ms: now_ms(),
            beat: 0,
        };
        self.with_conn(
            |c| c.set(&key, &encode(&entry), ENTRY_TTL_S),
            &format!("publishing {name}"),
        )?;
        self.remember(&key, Some(entry));
        Ok(())
    }

    /// The entry under `name`, if there is one.
    pub fn lookup(&self, name: &str) -> Result<Option<Entry>> {
        self.lookup_within(name, ANSWER_TIMEOUT)
    }

    /// [`Registry::lookup`], the answer awaited for `within` at most.
    pub(crate) fn lookup_within(&self, name: &str, within: Duration) -> Result<Option<Entry>> {
        let key = self.key(name)?;
        let raw = self.with_conn_within(within, |c| c.get(&key), &format!("looking up {name}"))?;
        raw.map(|v| {
            decode(&v).map_err(|why| {
                Error::protocol(format!(
                    "registry entry '{name}' at {} is malformed: {why}",
                    self.addr
                ))
            })
        })
        .transpose()
    }

    /// Waits until `name` appears (polling every 200 ms), saying so every few seconds.
    pub fn wait_for(&self, name: &str, opts: WaitOptions) -> Result<Entry> {
        self.wait(name, opts, |r| {
            Ok(r.lookup(name)?
                .filter(|e| opts.published_after_ms.is_none_or(|t| e.published_ms >= t)))
        })
    }

    pub(crate) fn wait<T>(
        &self,
        name: &str,
        opts: WaitOptions,
        mut probe: impl FnMut(&Self) -> Result<Option<T>>,
    ) -> Result<T> {
        let start = Instant::now();
        let mut announced = start;
        loop {
            if let Some(v) = probe(self)? {
                return Ok(v);
            }
            // Our own entries must outlive a long wait for a slow peer.
            live::refresh_if_due(self)?;
            if opts.stop.is_some_and(|a| a.stop_requested()) {
                return Err(Error::Stopped(format!("stopped while waiting for {name}")));
            }
            let waited = start.elapsed();
            if waited >= opts.timeout {
                return Err(Error::timeout(
                    format!("{name} did not appear at registry {}", self.addr),
                    opts.timeout,
                    None,
                ));
            }
            if announced.elapsed() >= opts.announce_every {
                eprintln!("waiting for {name} at {}", self.addr);
                announced = Instant::now();
            }
            std::thread::sleep(POLL_INTERVAL.min(opts.timeout.saturating_sub(waited)));
        }
    }

    /// Removes every key this registry handle published (done markers stay until they expire).
    pub fn unpublish_all(&self) {
        let keys = std::mem::take(&mut *self.published.lock().unwrap_or_else(|p| p.into_inner()));
        for (k, _) in keys {
            let _ = self.with_conn(|c| c.delete(&k), "removing keys");
        }
    }
}

/// A registry that did not answer or could not be reached (not a malformed name or entry).
pub(crate) fn is_outage(e: &Error) -> bool {
    matches!(e, Error::Registry { .. }) || e.is_timeout()
}

fn is_silence(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// A registry that accepted the connection but does not answer.
fn silent(addr: &str, what: &str) -> Error {
    Error::timeout(
        format!("the registry at {addr} did not answer ({what})"),
        ANSWER_TIMEOUT,
        Some("is it memcached, and is it alive?"),
    )
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.unpublish_all();
    }
}
