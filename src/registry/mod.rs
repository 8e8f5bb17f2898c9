//! QP-info exchange. [`Registry`]: memcached, with libhrd's key names (`server-<i>`, `client-<i>`,
//! `master-<port>-<clt>`…), so it fits the C suite's run scripts (memcached on the server machine,
//! `HRD_REGISTRY_IP`). [`exchange`]: a direct TCP exchange for two-party tools.
//!
//! Meeting a peer is one call: [`Registry::rendezvous`] (connected QPs: publish, wait for the peer,
//! connect, mark ready, wait for the peer's readiness from the same run), [`Registry::announce`]
//! and [`Registry::find_ready`] (UD: a receiver announces itself, a sender looks it up).

pub mod exchange;
mod memcached;
mod wire;

pub use wire::{decode, encode, Entry, VALUE_LEN};

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
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
pub fn registry_address(flag: Option<&str>) -> Result<(SocketAddr, String)> {
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
    let addr = with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            Error::config(format!(
                "registry address '{spec}' is not HOST[:PORT] or does not resolve"
            ))
        })?;
    Ok((addr, with_port))
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
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            timeout: Duration::from_secs(60),
            announce_every: Duration::from_secs(3),
            published_after_ms: None,
        }
    }
}

/// A connection to the registry. Keys published through it are deleted when it is dropped.
pub struct Registry {
    addr: String,
    conn: Mutex<Conn>,
    run_id: u64,
    published: Mutex<Vec<String>>,
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
    /// Connects; an unreachable or foreign server is reported at once, never retried.
    pub fn connect(flag: Option<&str>) -> Result<Registry> {
        let (addr, shown) = registry_address(flag)?;
        let conn = Conn::connect(addr, Duration::from_secs(2)).map_err(|e| Error::Registry {
            addr: shown.clone(),
            what: "cannot connect".into(),
            source: e,
            hint: Some("start memcached there, or set --registry / HRD_REGISTRY_IP"),
        })?;
        // Unique enough per process: time, pid and an address from this run's heap.
        let salt = Box::new(0u8);
        let run_id =
            now_ms() ^ (u64::from(std::process::id()) << 40) ^ ((&*salt as *const u8 as u64) << 8);
        Ok(Registry {
            addr: shown,
            conn: Mutex::new(conn),
            run_id,
            published: Mutex::new(Vec::new()),
        })
    }

    /// `HOST:PORT` of the registry, for messages.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// This process's run id, carried in every entry it publishes.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    fn io_err(&self, what: &str, e: std::io::Error) -> Error {
        Error::Registry {
            addr: self.addr.clone(),
            what: what.to_string(),
            source: e,
            hint: None,
        }
    }

    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> std::io::Result<T>,
        what: &str,
    ) -> Result<T> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn).map_err(|e| self.io_err(what, e))
    }

    fn remember(&self, key: &str) {
        let mut p = self.published.lock().unwrap_or_else(|p| p.into_inner());
        if !p.iter().any(|k| k == key) {
            p.push(key.to_string());
        }
    }

    /// Publishes `info` under `name` (overwriting a stale entry).
    pub fn publish(&self, name: &str, info: &QpInfo) -> Result<()> {
        check_key(name)?;
        let value = encode(&Entry {
            info: *info,
            run_id: self.run_id,
            published_ms: now_ms(),
        });
        self.with_conn(|c| c.set(name, &value), &format!("publishing {name}"))?;
        self.remember(name);
        Ok(())
    }

    /// The entry under `name`, if there is one.
    pub fn lookup(&self, name: &str) -> Result<Option<Entry>> {
        check_key(name)?;
        let raw = self.with_conn(|c| c.get(name), &format!("looking up {name}"))?;
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

    fn wait<T>(
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

    /// Marks `name` ready.
    pub fn publish_ready(&self, name: &str) -> Result<()> {
        let key = format!("{READY_PREFIX}{name}");
        check_key(&key)?;
        let value = format!("ready {:016x} {}", self.run_id, now_ms());
        self.with_conn(
            |c| c.set(&key, value.as_bytes()),
            &format!("marking {name} ready"),
        )?;
        self.remember(&key);
        Ok(())
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
            r.ready_run(name, expect_run)
        })
    }

    /// Whether `name` is marked ready (by `expect_run`, if given) right now.
    pub fn is_ready(&self, name: &str, expect_run: Option<u64>) -> Result<bool> {
        Ok(self.ready_run(name, expect_run)?.is_some())
    }

    fn ready_run(&self, name: &str, expect_run: Option<u64>) -> Result<Option<u64>> {
        let key = format!("{READY_PREFIX}{name}");
        check_key(&key)?;
        let v = self.with_conn(|c| c.get(&key), &format!("looking up {key}"))?;
        Ok(v.and_then(|v| {
            let s = String::from_utf8(v).ok()?;
            let run = u64::from_str_radix(s.strip_prefix("ready ")?.split(' ').next()?, 16).ok()?;
            expect_run.is_none_or(|e| e == run).then_some(run)
        }))
    }

    /// Meets the connected peer `peer`: publishes `info` as `me`, waits for `peer`'s entry, runs
    /// `connect` on it (bring the QP to RTS there), marks `me` ready, and waits until `peer` is
    /// marked ready by the same run as the entry we connected to, so a dead earlier run's entry
    /// is detected, never used. Returns the peer's entry.
    pub fn rendezvous(
        &self,
        me: &str,
        peer: &str,
        info: &QpInfo,
        wait: WaitOptions,
        connect: impl FnOnce(&QpInfo) -> Result<()>,
    ) -> Result<Entry> {
        self.publish(me, info)?;
        let remote = self.wait_for(peer, wait).map_err(stale_hint)?;
        connect(&remote.info)?;
        self.publish_ready(me)?;
        self.wait_ready(peer, wait, Some(remote.run_id))
            .map_err(stale_hint)?;
        Ok(remote)
    }

    /// Publishes a UD QP (`info`, already able to receive) and marks it ready in one step.
    pub fn announce(&self, me: &str, info: &QpInfo) -> Result<()> {
        self.publish(me, info)?;
        self.publish_ready(me)
    }

    /// Waits for a UD peer's entry and for its readiness from the same run.
    pub fn find_ready(&self, peer: &str, wait: WaitOptions) -> Result<Entry> {
        let remote = self.wait_for(peer, wait).map_err(stale_hint)?;
        self.wait_ready(peer, wait, Some(remote.run_id))
            .map_err(stale_hint)?;
        Ok(remote)
    }

    /// Removes every key this registry handle published.
    pub fn unpublish_all(&self) {
        let keys = std::mem::take(&mut *self.published.lock().unwrap_or_else(|p| p.into_inner()));
        for k in keys {
            let _ = self.with_conn(|c| c.delete(&k), "removing keys");
        }
    }
}

/// A wait that timed out may have been a stale entry's doing: say what to check, keep the kind.
fn stale_hint(e: Error) -> Error {
    match e {
        Error::Timeout { what, after, .. } => Error::Timeout {
            what,
            after,
            hint: Some(
                "is the peer running? if an earlier run was killed, its registry entries may be \
                 stale: restart memcached",
            ),
        },
        other => other,
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.unpublish_all();
    }
}
