//! A port without an IPv4 address (only the link-local IPv6 GIDs left), as on a fabric where
//! RoCE runs over IPv6: a paper benchmark without `--gid-index` picks perftest's GID (RoCE v2,
//! link-local), says so in one line and runs; `write-bw -R`'s server, whose RDMA CM listens on
//! IPv4, is refused at once instead of waiting for a client that cannot come. Its own binary in
//! the fabric boot (bench_scripts/test.sh): it takes the guest's address away, which no other
//! test may see meanwhile.

use crate::common::memcached;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use memcached::Memcached;

const RW: &str = env!("CARGO_BIN_EXE_rw-tput-sender");
const TOOL: &str = env!("CARGO_BIN_EXE_rdma-bench");

fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run through bench_scripts/test.sh"))
}

fn port_dir() -> String {
    format!("/sys/class/infiniband/{}/ports/1", env("RDMA_BENCH_DEVICE"))
}

/// True while the port's GID table holds an IPv4-mapped GID.
fn has_ipv4_gid() -> bool {
    std::fs::read_dir(format!("{}/gids", port_dir()))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .any(|g| g.starts_with("0000:0000:0000:0000:0000:ffff:"))
}

/// The port's netdev without its IPv4 address while it lives; put back after.
struct NoIpv4 {
    dev: String,
    addr: String,
}

impl NoIpv4 {
    fn take() -> NoIpv4 {
        let dev = std::fs::read_to_string(format!("{}/gid_attrs/ndevs/0", port_dir()))
            .unwrap()
            .trim()
            .to_string();
        let addr = format!("{}/24", env("RDMA_BENCH_IP"));
        ip(&["addr", "del", &addr, "dev", &dev]);
        let t0 = Instant::now();
        while has_ipv4_gid() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the IPv4 GID stayed"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        NoIpv4 { dev, addr }
    }
}

impl Drop for NoIpv4 {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["addr", "add", &self.addr, "dev", &self.dev])
            .status();
    }
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_port_without_ipv4_runs_on_its_ipv6_gid_or_is_refused_at_once() {
    let _gone = NoIpv4::take();
    let m = Memcached::start();
    let dev = env("RDMA_BENCH_DEVICE");
    // No --gid-index: the pick is the framework's.
    let rw = |extra: &[&str]| {
        Command::new(RW)
            .args(["--device", &dev, "--registry", &m.addr(), "--duration", "2"])
            .args(["--connect-timeout", "30"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let server = rw(&[]);
    let client = rw(&["--is-client", "1"]);
    let (s, c) = (
        server.wait_with_output().unwrap(),
        client.wait_with_output().unwrap(),
    );
    assert!(
        s.status.success() && c.status.success(),
        "{}\n{}",
        text(&s),
        text(&c)
    );
    let note = format!("main: {dev}:1 has no RoCE v2 IPv4-mapped GID (the port has no IPv4 address): using GID index ");
    for side in [&s, &c] {
        let out = String::from_utf8_lossy(&side.stdout);
        let line = out
            .lines()
            .find(|l| l.starts_with(&note))
            .unwrap_or_else(|| panic!("no GID note:\n{out}"));
        assert!(line.contains("(RoCE v2, link-local)"), "{line}");
        println!("{line}");
    }
    assert!(String::from_utf8_lossy(&s.stdout).contains("Total throughput"));

    // RDMA CM listens on IPv4: the server is refused within a second, before its banner.
    let t0 = Instant::now();
    let o = Command::new(TOOL)
        .args(["write-bw", "-R", "-d", &dev, "-p", "18830"])
        .output()
        .unwrap();
    // At once: 5 s covers the emulated guest's slow process start; a listen would not end.
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("-R: no ACTIVE port of {dev} has an IPv4 address")),
        "{err}"
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("Waiting"),
        "{}",
        text(&o)
    );
}
