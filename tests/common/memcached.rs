//! A real memcached (Debian's package) on 127.0.0.1 (or ::1) and a free port, stopped on drop.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

pub struct Memcached {
    child: Child,
    /// The address it listens on: 127.0.0.1, or ::1 ([`Memcached::start_ipv6`]).
    host: &'static str,
    pub port: u16,
}

impl Memcached {
    /// On a free port. Test processes run side by side (the device binary's failures:: beside
    /// the rest, the host binary's registry:: beside the others), so a port free when picked may
    /// be taken by another process's memcached before ours binds it: ours then exits, and the
    /// one answering is the other test's. Only a memcached that reports our child's pid counts.
    pub fn start() -> Memcached {
        Memcached::start_at("127.0.0.1")
    }

    /// On ::1 alone (no IPv4 listener), as on a cluster whose management network is IPv6 only.
    pub fn start_ipv6() -> Memcached {
        Memcached::start_at("::1")
    }

    fn start_at(host: &'static str) -> Memcached {
        for _ in 0..20 {
            if let Some(m) = Memcached::try_start(host, free_port()) {
                return m;
            }
        }
        panic!("memcached did not start on {host} on any of 20 free ports");
    }

    /// On `port` (e.g. again, after [`Memcached::stop`]).
    pub fn start_on(port: u16) -> Memcached {
        Memcached::try_start("127.0.0.1", port)
            .unwrap_or_else(|| panic!("memcached did not start on port {port} (taken?)"))
    }

    /// Ours on `port`, serving, or None once it exits or another process's serves there.
    fn try_start(host: &'static str, port: u16) -> Option<Memcached> {
        let mut cmd = Command::new("memcached");
        cmd.args(["-l", host, "-p", &port.to_string(), "-U", "0"]);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-u", "root"]);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("memcached not installed (bench_scripts/softroce.sh setup installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match serving_pid(host, port) {
                Some(pid) if pid == child.id() => return Some(Memcached { child, host, port }),
                Some(_) => break,
                None if child.try_wait().unwrap().is_some() => break,
                None => {}
            }
            assert!(
                Instant::now() < deadline,
                "memcached did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    /// Kills it now (an outage); dropping it later does nothing more.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `HOST:PORT` as `--registry` takes it (`[::1]:PORT` for IPv6).
    pub fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// True when it holds `key` (a registry entry, once its process has published it).
    #[allow(dead_code)] // not every test binary that starts a memcached reads it
    pub fn has(&self, key: &str) -> bool {
        self.command(&format!("get {key}\r\n"), b"VALUE")
    }

    /// Waits until every one of `names` is marked ready in the registry (a connected side after
    /// its rendezvous, a UD side once announced), then `settle` more: the proof that a run is
    /// measuring, where a fixed wait from the processes' start was too short on a busy guest.
    pub fn wait_ready(&self, names: &[&str], settle: Duration) {
        let prefix = rdma_bench::registry::READY_PREFIX;
        let what = format!("{names:?} all ready in the registry");
        super::wait_for(Duration::from_secs(60), &what, || {
            names.iter().all(|n| self.has(&format!("{prefix}{n}")))
        });
        std::thread::sleep(settle);
    }

    /// Removes `key`; false when there was no such key.
    pub fn delete(&self, key: &str) -> bool {
        self.command(&format!("delete {key}\r\n"), b"DELETED")
    }

    /// Makes `key` expire in `secs` from now, its value untouched (memcached's `touch`); false
    /// when there is no such key.
    pub fn touch(&self, key: &str, secs: u32) -> bool {
        self.command(&format!("touch {key} {secs}\r\n"), b"TOUCHED")
    }

    /// Sends one command line; true when the answer starts with `ok`.
    fn command(&self, line: &str, ok: &[u8]) -> bool {
        let Ok(mut s) = TcpStream::connect((self.host, self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reply = vec![0u8; ok.len()];
        s.write_all(line.as_bytes()).is_ok() && s.read_exact(&mut reply).is_ok() && reply == ok
    }
}

/// The pid of the memcached that answers `stats` on `port`, once one does: a listening socket
/// alone is not enough (a connection accepted that early was once reset under load, failing an
/// unrelated test).
fn serving_pid(host: &str, port: u16) -> Option<u32> {
    let mut s = TcpStream::connect((host, port)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    s.write_all(b"stats\r\n").ok()?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.ends_with(b"END\r\n") {
        let n = s.read(&mut buf).ok().filter(|&n| n > 0)?;
        reply.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&reply)
        .lines()
        .find_map(|l| l.strip_prefix("STAT pid "))
        .and_then(|p| p.trim().parse().ok())
}

/// A port no other test of this process has taken: tests run in parallel, and two servers racing
/// for one ephemeral port would make one test talk to the other's memcached.
pub fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 20_000) as u16;
    loop {
        let port = base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed) % 5_000);
        if port > 1024 && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
