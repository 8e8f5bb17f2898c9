//! A real memcached (Debian's package) on 127.0.0.1 and a free port, stopped on drop.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

pub struct Memcached {
    child: Child,
    pub port: u16,
}

impl Memcached {
    pub fn start() -> Memcached {
        Memcached::start_on(free_port())
    }

    /// On `port` (e.g. again, after [`Memcached::stop`]).
    pub fn start_on(port: u16) -> Memcached {
        let mut cmd = Command::new("memcached");
        cmd.args(["-l", "127.0.0.1", "-p", &port.to_string(), "-U", "0"]);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-u", "root"]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("memcached not installed (bench_scripts/softroce.sh setup installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !serves(port) {
            assert!(
                Instant::now() < deadline,
                "memcached did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Memcached { child, port }
    }

    /// Kills it now (an outage); dropping it later does nothing more.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// True when it holds `key` (a registry entry, once its process has published it).
    #[allow(dead_code)] // not every test binary that starts a memcached reads it
    pub fn has(&self, key: &str) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut reply = [0u8; 5];
        s.write_all(format!("get {key}\r\n").as_bytes()).is_ok()
            && s.read_exact(&mut reply).is_ok()
            && &reply == b"VALUE"
    }
}

/// True once memcached answers a request on `port`: a listening socket alone is not enough (a
/// connection accepted that early was once reset under load, failing an unrelated test).
fn serves(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 8];
    s.write_all(b"version\r\n").is_ok()
        && s.read_exact(&mut reply).is_ok()
        && reply.starts_with(b"VERSION")
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
