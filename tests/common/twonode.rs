//! Two-node testbed helpers (`softroce.sh run --nodes 2`): which node this is, node 0's
//! registry, and the benchmarks started against it. Outside that testbed they fail, never skip.

#![allow(dead_code)]

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use super::bench_run::device_args;

/// The registry's port on node 0, set by `Registry::start`: one per test. The tests run one
/// after another on both nodes, and a node that finishes one first must not meet the other
/// node's registry of the test before (which goes away under it).
static PORT: AtomicU16 = AtomicU16::new(0);

pub fn port() -> u16 {
    match PORT.load(Ordering::Relaxed) {
        0 => panic!("no registry: the test starts one with Registry::start(its own port)"),
        p => p,
    }
}

pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: this test runs on both nodes of `softroce.sh run --nodes 2` (bench_scripts/test.sh)")
    })
}

pub fn node() -> u32 {
    env("SOFTROCE_NODE")
        .parse()
        .expect("SOFTROCE_NODE is 0 or 1")
}

/// Node 0's registry as `--registry` takes it: `HOST:PORT`, `[HOST]:PORT` for an IPv6 node.
pub fn registry() -> String {
    let host = if node() == 0 {
        env("RDMA_BENCH_IP")
    } else {
        env("SOFTROCE_PEER")
    };
    if host.contains(':') {
        format!("[{host}]:{}", port())
    } else {
        format!("{host}:{}", port())
    }
}

pub fn spawn(bin: &str, args: &[&str], secs: &str) -> Child {
    Command::new(bin)
        .args(args)
        .args(device_args())
        .args([
            "--registry",
            &registry(),
            "--duration",
            secs,
            "--json",
            "--connect-timeout",
            "90",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("benchmark binary runs")
}

/// Node 0 serves the registry on its own address for the whole test.
pub struct Registry(Option<Child>);

impl Registry {
    /// Node 0's registry at port `at` (each test its own) for the rest of the test.
    pub fn start(at: u16) -> Registry {
        PORT.store(at, Ordering::Relaxed);
        if node() != 0 {
            // Node 1 waits until node 0's registry answers (its guest may boot later).
            let deadline = Instant::now() + Duration::from_secs(60);
            while TcpStream::connect(registry()).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "node 0's registry at {} never answered",
                    registry()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
            return Registry(None);
        }
        let mut cmd = Command::new("memcached");
        cmd.args([
            "-l",
            &env("RDMA_BENCH_IP"),
            "-p",
            &port().to_string(),
            "-U",
            "0",
            "-u",
            "root",
        ]);
        let child = cmd.stdout(Stdio::null()).spawn().expect("memcached runs");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(registry()).is_err() {
            assert!(Instant::now() < deadline, "memcached did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Registry(Some(child))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            if std::thread::panicking() {
                // Node 1 may be in the middle of the same scenario: let it end on its own
                // terms (and say why) before the registry goes.
                std::thread::sleep(Duration::from_secs(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The netdev under this node's RDMA device (the GID table names it).
pub fn netdev() -> String {
    let dev = env("RDMA_BENCH_DEVICE");
    let p = format!("/sys/class/infiniband/{dev}/ports/1/gid_attrs/ndevs/0");
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{p}: {e}"))
        .trim()
        .to_string()
}

/// Waits for `c`; returns its exit code, stdout and stderr.
pub fn outcome(c: Child) -> (i32, String, String) {
    let o = c.wait_with_output().unwrap();
    super::output_of(o)
}

/// rw-tput-sender between the nodes: node 0 the server (it posts and counts for `secs`), node 1
/// the client (passive: it ends when the server says done, or `client_secs` plus the grace
/// for the server's last WRs).
pub fn rw_pair(extra: &[&str], secs: &str, client_secs: &str) -> Child {
    let mut a = extra.to_vec();
    if node() == 1 {
        a.extend(["--is-client", "1"]);
        return spawn(env!("CARGO_BIN_EXE_rw-tput-sender"), &a, client_secs);
    }
    spawn(env!("CARGO_BIN_EXE_rw-tput-sender"), &a, secs)
}

/// A perftest-style tool between the nodes on TCP port `port`: node 0 serves, node 1's client
/// connects to it.
pub fn tool_pair(tool: &str, port: u16, args: &[&str]) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rdma-bench"));
    c.arg(tool).args(device_flags(port)).args(args);
    if node() == 1 {
        // Our client retries until the server listens. Node 0 may first start a capture or
        // run a check of its own, and two starved guests stretch that past the default 10 s.
        c.args(["--connect-timeout", "60"])
            .arg(env("SOFTROCE_PEER"));
    }
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rdma-bench runs")
}

/// perftest's `ib_tool` (ib_write_bw …) as the server on node 0, our `tool` as node 1's client
/// (which retries until the server listens; perftest's client would not).
#[allow(dead_code)] // not every two-node test binary meets perftest
pub fn against_perftest(ib_tool: &str, tool: &str, port: u16, args: &[&str]) -> Child {
    if node() == 1 {
        return tool_pair(tool, port, args);
    }
    Command::new(ib_tool)
        .args(device_flags(port))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{ib_tool} runs: {e}"))
}

/// perftest's `-d DEV -x GID -p PORT` for this node's device, ours and perftest's alike.
pub fn device_flags(port: u16) -> Vec<String> {
    vec![
        "-d".into(),
        env("RDMA_BENCH_DEVICE"),
        "-x".into(),
        env("RDMA_BENCH_GID_INDEX"),
        "-p".into(),
        port.to_string(),
    ]
}
