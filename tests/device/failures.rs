//! Failures tell the truth, on a real device: killed runs' registry entries are never trusted,
//! failed runs print no result-shaped summary, a stop ends every wait, run names keep experiments
//! apart, and a peer killed mid-run is reported (RC, UC, UD) within a bound with a non-zero exit
//! and what was measured before.

use crate::common::bench_run;
use crate::common::memcached;

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bench_run::{check_counting, check_passive, device_args};
use memcached::Memcached;

const RW: &str = env!("CARGO_BIN_EXE_rw-tput-sender");

/// Starts `bin` with the device, the registry, JSON output and `args`.
fn start(bin: &str, m: &Memcached, args: &[&str]) -> Child {
    Command::new(bin)
        .args(device_args())
        .args(["--registry", &m.addr(), "--json"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("benchmark binary runs")
}

/// Waits at most `limit` for `c` to exit (killing it past that); returns its status, how long it
/// took, stdout and stderr.
fn ended(mut c: Child, limit: Duration) -> (ExitStatus, Duration, String, String) {
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = c.kill();
            let out = c.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = t0.elapsed();
    let out = c.wait_with_output().unwrap();
    (
        out.status,
        took,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kill9(c: &mut Child) {
    c.kill().unwrap(); // SIGKILL: no cleanup at all
    c.wait().unwrap();
}

/// The JSON summary object of a run's stdout.
fn summary(out: &str) -> serde_json::Value {
    out.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["summary"] == true)
        .unwrap_or_else(|| panic!("no JSON summary:\n{out}"))
}

/// A failed run: the exit code, no `Total throughput` line, a "run failed" line, and a JSON
/// summary with ok false and the error.
fn check_failed(out: &str, code: i32, status: ExitStatus, err: &str) {
    assert_eq!(status.code(), Some(code), "{out}\n{err}");
    assert!(
        !out.contains("Total throughput"),
        "result-shaped line:\n{out}"
    );
    assert!(out.contains("main: run failed: "), "{out}");
    let s = summary(out);
    assert_eq!(s["ok"], false, "{s}");
    assert!(s["error"].as_str().is_some_and(|e| !e.is_empty()), "{s}");
}

/// A pair that ran and was killed with -9 on both sides: its entries stay behind (until they
/// expire). Killed once both have published their entries and a second more: a fixed wait
/// was once too short on a busy guest, and the new run then found no entry at all.
///
/// A killed run's entry outlives it by ENTRY_TTL_S (6 s) at most, and a new process on a busy
/// guest once took longer than that to reach the registry: it then found no entry, not a stale
/// one. The dead entries are given 30 s (`touch`, their content untouched), so that what the
/// new run meets is always what it would meet within the 6 s: a heartbeat that stands still.
fn killed_pair(m: &Memcached) {
    // The last pair's kept entries go first: the wait below is for this pair's.
    for key in ["server-0", "client-0"] {
        m.delete(key);
    }
    let mut s = start(RW, m, &["--duration", "600"]);
    let mut c = start(RW, m, &["--is-client", "1", "--duration", "600"]);
    crate::common::wait_for(Duration::from_secs(60), "the pair's two entries", || {
        m.has("server-0") && m.has("client-0")
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(s.try_wait().unwrap().is_none() && c.try_wait().unwrap().is_none());
    kill9(&mut s);
    kill9(&mut c);
    for key in ["server-0", "client-0"] {
        assert!(
            m.touch(key, 30),
            "{key}'s entry expired before the test could keep it"
        );
    }
}

#[test]
fn a_killed_runs_entries_are_never_trusted_in_any_restart_order() {
    let m = Memcached::start();
    let quick = [
        "--connect-timeout",
        "10",
        "--duration",
        "2",
        "--verify",
        "1",
    ];
    // The passive side leaves when the active one says done (its own --duration counts from its
    // start and could end it first).
    let client = [
        "--connect-timeout",
        "10",
        "--duration",
        "60",
        "--verify",
        "1",
        "--is-client",
        "1",
    ];

    // New active alone: it finds the dead passive's entry, says so, and fails within the bound.
    killed_pair(&m);
    let (st, took, out, err) = ended(start(RW, &m, &quick), Duration::from_secs(30));
    assert!(
        err.contains("client-0's registry entry") && err.contains("is stale"),
        "{err}"
    );
    check_failed(&out, 1, st, &err);
    assert!(took < Duration::from_secs(20), "{took:?}");

    // New passive alone: likewise, never "done" with exit 0.
    killed_pair(&m);
    let (st, took, out, err) = ended(start(RW, &m, &client), Duration::from_secs(30));
    assert!(
        err.contains("server-0's registry entry") && err.contains("is stale"),
        "{st:?} after {took:?}:\n{out}\n{err}"
    );
    assert_ne!(st.code(), Some(0), "{out}\n{err}");
    assert!(!out.contains(" done"), "{out}");

    // Both again, in either order: they find each other past the dead entries and measure.
    for active_first in [true, false] {
        killed_pair(&m);
        let (first, second): (&[&str], &[&str]) = if active_first {
            (&quick, &client)
        } else {
            (&client, &quick)
        };
        let a = start(RW, &m, first);
        std::thread::sleep(Duration::from_secs(1));
        let b = start(RW, &m, second);
        let (sa, _, oa, ea) = ended(a, Duration::from_secs(60));
        let (sb, _, ob, eb) = ended(b, Duration::from_secs(60));
        assert!(sa.success() && sb.success(), "{oa}\n{ea}\n{ob}\n{eb}");
        let (active, passive) = if active_first { (oa, ob) } else { (ob, oa) };
        check_counting(&active, "Server", 1, "rw-tput-sender", "WRITE");
        check_passive(&passive, "rw-tput-sender");
        assert!(passive.contains("main: verify ok"), "{passive}");
    }
}

#[test]
fn a_setup_failure_prints_no_result() {
    let m = Memcached::start();
    let (st, took, out, err) = ended(
        start(RW, &m, &["--connect-timeout", "1"]),
        Duration::from_secs(20),
    );
    check_failed(&out, 1, st, &err);
    assert!(took < Duration::from_secs(10));
    assert!(err.contains("client-0 did not appear"), "{err}");
}

/// The index of a RoCE v2 GID of this device's port 1 that is not IPv4-mapped (the fe80::
/// link-local one every netdev has).
fn ipv6_gid_index(dev: &str) -> String {
    let port = format!("/sys/class/infiniband/{dev}/ports/1");
    (0..16)
        .find(|i| {
            let gid = std::fs::read_to_string(format!("{port}/gids/{i}")).unwrap_or_default();
            let ty =
                std::fs::read_to_string(format!("{port}/gid_attrs/types/{i}")).unwrap_or_default();
            gid.starts_with("fe80") && ty.trim() == "RoCE v2"
        })
        .unwrap_or_else(|| panic!("{port}: no RoCE v2 fe80:: GID"))
        .to_string()
}

/// One end on an IPv6 GID, the other on the IPv4-mapped one: both refuse at connect, naming the
/// two GIDs, instead of a failed modify on one side and a long wait on the other.
#[test]
fn gids_of_two_families_are_refused_on_both_sides() {
    let m = Memcached::start();
    let dev = std::env::var("RDMA_BENCH_DEVICE").expect("RDMA_BENCH_DEVICE");
    let v4 = std::env::var("RDMA_BENCH_GID_INDEX").expect("RDMA_BENCH_GID_INDEX");
    let v6 = ipv6_gid_index(&dev);
    let side = |gid: &str, extra: &[&str]| {
        Command::new(RW)
            .args(["--device", &dev, "--gid-index", gid])
            .args(["--registry", &m.addr(), "--json", "--duration", "2"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("benchmark binary runs")
    };
    let server = side(&v6, &[]);
    let client = side(&v4, &["--is-client", "1"]);
    for (who, c) in [("server", server), ("client", client)] {
        let (st, took, out, err) = ended(c, Duration::from_secs(60));
        assert_ne!(st.code(), Some(0), "{who}:\n{out}\n{err}");
        assert!(took < Duration::from_secs(30), "{who} took {took:?}");
        assert!(
            // Its own connect's refusal, or the peer's (carried by its failure marker).
            err.contains("GIDs are of different families"),
            "{who}:\n{out}\n{err}"
        );
        println!("{who}: {}", err.trim());
    }
}

#[test]
fn sigint_while_waiting_for_a_peer_ends_the_run_at_once() {
    let m = Memcached::start();
    let c = start(RW, &m, &["--connect-timeout", "60"]);
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let (st, took, out, err) = ended(c, Duration::from_secs(10));
    assert!(took < Duration::from_secs(2), "{took:?}");
    check_failed(&out, 130, st, &err);
    assert!(out.contains("stopped while waiting for client-0"), "{out}");
}

#[test]
fn run_names_keep_two_pairs_on_one_registry_apart() {
    let m = Memcached::start();
    // Only one side of each experiment: under different run names they must not meet.
    let a = start(RW, &m, &["--run-name", "exp-a", "--connect-timeout", "4"]);
    let b = start(
        RW,
        &m,
        &[
            "--run-name",
            "exp-b",
            "--is-client",
            "1",
            "--connect-timeout",
            "4",
        ],
    );
    for c in [a, b] {
        let (st, _, out, err) = ended(c, Duration::from_secs(20));
        assert_eq!(
            st.code(),
            Some(1),
            "they met across run names:\n{out}\n{err}"
        );
        assert!(err.contains("did not appear"), "{err}");
    }
    // Two whole pairs at the same time, each under its own name (RDMA_BENCH_RUN_NAME too).
    let pair = |name: &str| {
        let s = start(RW, &m, &["--duration", "2", "--run-name", name]);
        let c = Command::new(RW)
            .args(device_args())
            .args(["--registry", &m.addr(), "--json", "--duration", "60"])
            .args(["--verify", "1", "--is-client", "1"])
            .env("RDMA_BENCH_RUN_NAME", name)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        (s, c)
    };
    let (s1, c1) = pair("exp-a");
    let (s2, c2) = pair("exp-b");
    for (s, c) in [(s1, c1), (s2, c2)] {
        let (ss, _, so, se) = ended(s, Duration::from_secs(60));
        let (cs, _, co, ce) = ended(c, Duration::from_secs(60));
        assert!(ss.success() && cs.success(), "{so}\n{se}\n{co}\n{ce}");
        check_counting(&so, "Server", 1, "rw-tput-sender", "WRITE");
        assert!(co.contains("main: verify ok"), "{co}");
    }
}

/// Kills the `victim` (-9) once the survivor has measured for a while; the survivor must report
/// the lost peer within `bound`, exit 3, and print what it measured before.
///
/// The pair measures for 3 s from the moment both are ready, not from their start: a fixed 4 s
/// from the start was once too short on a busy guest, the victim died before the pair connected,
/// and the survivor then waited out the registry's expiry instead.
fn survivor_reports(
    m: &Memcached,
    survivor: Child,
    mut victim: Child,
    bound: Duration,
    peer: &str,
) {
    m.wait_ready(&["server-0", "client-0"], Duration::from_secs(3));
    kill9(&mut victim);
    let (st, took, out, err) = ended(survivor, bound + Duration::from_secs(20));
    assert!(took < bound, "took {took:?}:\n{out}\n{err}");
    check_failed(&out, 3, st, &err);
    assert!(out.contains(&format!("peer {peer} is gone")), "{out}");
}

/// How long a peer noticed only by its registry entry takes to be lost: the entry's expiry, the
/// grace, a check's period, and slack for the emulated guest.
const BY_REGISTRY: Duration = Duration::from_secs(
    rdma_bench::registry::ENTRY_TTL_S as u64 + rdma_bench::registry::GRACE.as_secs() + 10,
);

// A peer killed mid-run, five ways: each is its own test so that the two test threads share
// their waits (four of them wait out a registry entry's expiry, about 20 s each).
const LONG: [&str; 2] = ["--duration", "600"];
const CLIENT: [&str; 4] = ["--is-client", "1", "--duration", "600"];

/// RC, the passive side dies: the active side's next reap fails after the transport's retries.
#[test]
fn a_killed_rc_server_is_reported_by_its_client() {
    let m = Memcached::start();
    let s = start(RW, &m, &LONG);
    let c = start(RW, &m, &CLIENT);
    survivor_reports(&m, s, c, Duration::from_secs(15), "client-0");
}

/// RC, the active side dies: the passive side sees its entry expire and stay away for the grace
/// a late heartbeat gets (ENTRY_TTL_S, then GRACE: about 20 s in all).
#[test]
fn a_killed_rc_client_is_reported_by_its_server() {
    let m = Memcached::start();
    let s = start(RW, &m, &LONG);
    let c = start(RW, &m, &CLIENT);
    std::thread::sleep(Duration::from_millis(500));
    survivor_reports(&m, c, s, BY_REGISTRY, "server-0");
}

/// UC: no ACK ever fails; the entry's expiry tells.
#[test]
fn a_killed_uc_peer_is_reported_by_its_entry() {
    let m = Memcached::start();
    let s = start(RW, &m, &["--use-uc", "1", "--duration", "600"]);
    let c = start(
        RW,
        &m,
        &["--use-uc", "1", "--is-client", "1", "--duration", "600"],
    );
    survivor_reports(&m, s, c, BY_REGISTRY, "client-0");
}

/// UD: the sender's receiver dies.
#[test]
fn a_killed_ud_receiver_is_reported_by_its_sender() {
    let m = Memcached::start();
    let ud = env!("CARGO_BIN_EXE_ud-sender");
    let mut s = start(ud, &m, &LONG);
    let c = start(ud, &m, &CLIENT);
    std::thread::sleep(Duration::from_millis(10));
    assert!(s.try_wait().unwrap().is_none());
    survivor_reports(&m, s, c, BY_REGISTRY, "client-0");
}

/// UD: the sender dies; its receiver sees its entry expire.
#[test]
fn a_killed_ud_sender_is_reported_by_its_receiver() {
    let m = Memcached::start();
    let ud = env!("CARGO_BIN_EXE_ud-sender");
    let c = start(ud, &m, &CLIENT);
    let s = start(ud, &m, &LONG);
    survivor_reports(&m, c, s, BY_REGISTRY, "server-0");
}

/// A server told to expect two clients sees one: stopped as run-local.sh stops it once the
/// counting side is done, it says which client came and which did not, and exits 5, not 130.
#[test]
fn a_server_missing_clients_names_them_and_exits_5() {
    let m = Memcached::start();
    let bin = env!("CARGO_BIN_EXE_atomics-sequencer");
    let a = [
        "--num-clients",
        "2",
        "--buf-size",
        "1048576",
        "--shm-key",
        "9503",
        "--duration",
        "2",
    ];
    let s = start(bin, &m, &a);
    let mut c = a.to_vec();
    c.extend(["--is-client", "1", "--num-threads", "1"]);
    let (cs, _, co, ce) = ended(start(bin, &m, &c), Duration::from_secs(60));
    assert!(cs.success(), "{co}\n{ce}");
    check_counting(&co, "Client", 1, "atomics-sequencer", "DRTM");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(s.id() as i32, libc::SIGINT) };
    let (st, took, out, err) = ended(s, Duration::from_secs(10));
    assert!(took < Duration::from_secs(3), "{took:?}");
    check_failed(&out, 5, st, &err);
    assert!(
        err.contains(
            "atomics-sequencer: 1 of 2 clients came (client 0); client 1 did not (stopped while \
             waiting for client-1-0"
        ) && err.contains("): start them, or run with --num-clients 1"),
        "{err}"
    );
}
