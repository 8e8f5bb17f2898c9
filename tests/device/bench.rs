//! Every benchmark, both roles, a few seconds at small size on a real device: non-zero throughput
//! on every counting thread, clean exits, the summary line, a valid JSON summary, and a data check
//! (--verify). Also: device-dependent refusals, and SIGINT mid-run.

use crate::common::bench_run;
use crate::common::memcached;

use std::process::Command;
use std::time::{Duration, Instant};

use bench_run::{
    check_counting, check_passive, device_args, finish, read_to_first_rates, run_pair,
    segments_made_by, spawn, SECS,
};
use memcached::Memcached;

/// A server and a client that meet through a registry reachable over IPv6 only (memcached on
/// ::1, `--registry [::1]:PORT`), as on clusters without an IPv4 management network.
#[test]
fn a_pair_meets_through_an_ipv6_registry() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    let m = Memcached::start_ipv6();
    let server = spawn(bin, &m, &["--size", "32"], SECS);
    let client = spawn(bin, &m, &["--size", "32", "--is-client", "1"], "60");
    let s = finish(server, "server over an IPv6 registry");
    let c = finish(client, "client over an IPv6 registry");
    check_counting(&s, "Server", 1, "rw-tput-sender", "WRITE");
    check_passive(&c, "rw-tput-sender");
}

#[test]
fn rw_tput_sender_write_two_threads_then_read() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    let w = [
        "--num-threads",
        "2",
        "--size",
        "32",
        "--postlist",
        "16",
        "--verify",
        "1",
    ];
    let (s, c) = run_pair(bin, &w, &w, SECS, "60");
    check_counting(&s, "Server", 2, "rw-tput-sender", "WRITE");
    check_passive(&c, "rw-tput-sender");
    assert_eq!(
        c.matches("main: verify ok: 16 WRITE slot(s) of 32 bytes")
            .count(),
        2,
        "{c}"
    );

    let r = [
        "--size",
        "32",
        "--postlist",
        "1",
        "--do-read",
        "1",
        "--verify",
        "1",
    ];
    let (s, c) = run_pair(bin, &r, &r, SECS, "60");
    check_counting(&s, "Server", 1, "rw-tput-sender", "READ");
    assert!(
        s.contains("main: verify ok: 1 READ slot(s) of 32 bytes"),
        "{s}"
    );
    check_passive(&c, "rw-tput-sender");
}

/// `--post-api wr`: the same postlists through ibv_wr_start … ibv_wr_complete (hot::WrBatch),
/// WRITEs then READs, counted like the classic path and verified.
#[cfg(has_wr_api)]
#[test]
fn rw_tput_sender_through_the_wr_api() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    let w = [
        "--post-api",
        "wr",
        "--size",
        "32",
        "--postlist",
        "16",
        "--verify",
        "1",
    ];
    let (s, c) = run_pair(bin, &w, &w, SECS, "60");
    check_counting(&s, "Server", 1, "rw-tput-sender", "WRITE");
    check_passive(&c, "rw-tput-sender");
    assert!(
        c.contains("main: verify ok: 16 WRITE slot(s) of 32 bytes"),
        "{c}"
    );
    let r = [
        "--post-api",
        "wr",
        "--size",
        "64",
        "--postlist",
        "4",
        "--do-read",
        "1",
        "--verify",
        "1",
    ];
    let (s, c) = run_pair(bin, &r, &r, SECS, "60");
    check_counting(&s, "Server", 1, "rw-tput-sender", "READ");
    assert!(
        s.contains("main: verify ok: 4 READ slot(s) of 64 bytes"),
        "{s}"
    );
    check_passive(&c, "rw-tput-sender");
}

#[test]
fn rw_tput_receiver_clients_post() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-receiver");
    let a = ["--size", "16", "--postlist", "8", "--verify", "1"];
    let (s, c) = run_pair(bin, &a, &a, "60", SECS);
    check_counting(&c, "Client", 1, "rw-tput-receiver", "WRITE");
    check_passive(&s, "rw-tput-receiver");
    assert!(
        s.contains("main: verify ok: 8 WRITE slot(s) of 16 bytes"),
        "{s}"
    );
}

#[test]
fn ud_sender_and_its_receiving_clients() {
    let bin = env!("CARGO_BIN_EXE_ud-sender");
    let a = ["--size", "32", "--postlist", "16"];
    let (s, c) = run_pair(bin, &a, &a, SECS, SECS);
    check_counting(&s, "Server", 1, "ud-sender", "SEND");
    check_counting(&c, "Client", 1, "ud-sender", "RECV");
}

#[test]
fn ud_receiver_checks_the_immediate() {
    let bin = env!("CARGO_BIN_EXE_ud-receiver");
    let a = ["--size", "32", "--postlist", "16", "--verify", "1"];
    let (s, c) = run_pair(bin, &a, &a, SECS, SECS);
    check_counting(&c, "Client", 1, "ud-receiver", "SEND");
    check_counting(&s, "Server", 1, "ud-receiver", "RECV");
    assert!(s.contains("SENDs carried immediate 3185"), "{s}");
}

#[test]
fn rw_allsig_read_window() {
    let bin = env!("CARGO_BIN_EXE_rw-allsig");
    let a = [
        "--size",
        "8",
        "--window",
        "16",
        "--do-read",
        "1",
        "--verify",
        "1",
    ];
    let (s, c) = run_pair(bin, &a, &a, SECS, "60");
    check_counting(&s, "Server", 1, "rw-allsig", "READ");
    assert!(
        s.contains("main: verify ok: 16 READ slot(s) of 8 bytes"),
        "{s}"
    );
    check_passive(&c, "rw-allsig");
}

#[test]
fn rw_postlist_latency_reports_percentiles() {
    let bin = env!("CARGO_BIN_EXE_rw-postlist-latency");
    let a = ["--size", "8", "--postlist", "4", "--verify", "1"];
    let (s, c) = run_pair(bin, &a, &a, SECS, "60");
    check_counting(&s, "Server", 1, "rw-postlist-latency", "WRITE");
    check_passive(&c, "rw-postlist-latency");
    assert!(
        c.contains("main: verify ok: 4 WRITE slot(s) of 8 bytes"),
        "{c}"
    );
    let lat: serde_json::Value = s
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["latency"] == true)
        .expect("latency JSON");
    let (avg, med, p99) = (
        lat["average_us"].as_f64().unwrap(),
        lat["median_us"].as_f64().unwrap(),
        lat["p99_us"].as_f64().unwrap(),
    );
    assert!(avg > 0.0 && med > 0.0 && p99 >= med, "{lat}");
    assert!(s.contains("main: Server 0: Average latency = "), "{s}");
}

#[test]
fn sender_scalability_over_four_client_qps() {
    let bin = env!("CARGO_BIN_EXE_sender-scalability");
    let a = ["--size", "32", "--num-clients", "4"];
    let (s, c) = run_pair(bin, &a, &a, SECS, "60");
    check_counting(&s, "Server", 1, "sender-scalability", "WRITE");
    check_passive(&c, "sender-scalability");
}

#[test]
fn sigint_mid_run_prints_the_summary_and_leaks_nothing() {
    let m = Memcached::start();
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    let mut server = spawn(bin, &m, &["--size", "32"], "600");
    let client = spawn(bin, &m, &["--is-client", "1"], "600");
    // Its own segments only: other tests' benchmarks run beside this one.
    let pids = [server.id(), client.id()];
    // Let it measure for a while (its first rate line proves it is running), then interrupt it.
    let started = Instant::now();
    let head = read_to_first_rates(&mut server, &["main: Server 0: "]);
    assert!(server.try_wait().unwrap().is_none(), "server ended early");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGINT) };
    let s = head + &finish(server, "interrupted server");
    assert!(started.elapsed() < Duration::from_secs(60));
    check_counting(&s, "Server", 1, "rw-tput-sender", "WRITE");
    let c = finish(client, "client");
    check_passive(&c, "rw-tput-sender");
    let left = segments_made_by(&pids);
    assert!(left.is_empty(), "SysV segments were left behind: {left:?}");
}

#[test]
fn device_refusals_name_the_problem() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    let out = Command::new(bin)
        .args(["--device", "nosuch0", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("rw-tput-sender: no RDMA device named 'nosuch0' (devices: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let out = Command::new(bin)
        .args(device_args())
        .args(["--port-index", "3", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("has no port 4"), "{err}");

    let out = Command::new(bin)
        .args(&device_args()[..2])
        .args(["--gid-index", "999", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("rw-tput-sender: GID index 999 is not valid on "),
        "{err}"
    );
}

/// A second Soft-RoCE device on a netdev that is down has a port that is not ACTIVE.
#[test]
fn port_not_active_is_refused() {
    let run = |cmd: &[&str]| {
        let st = Command::new(cmd[0])
            .args(&cmd[1..])
            .status()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        assert!(st.success(), "{cmd:?} failed");
    };
    run(&["ip", "link", "add", "rbdown0", "type", "dummy"]);
    run(&[
        "rdma", "link", "add", "rxedown0", "type", "rxe", "netdev", "rbdown0",
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_rw-tput-sender"))
        .args(["--device", "rxedown0", "--duration", "1"])
        .output()
        .unwrap();
    let _ = Command::new("rdma")
        .args(["link", "delete", "rxedown0"])
        .status();
    let _ = Command::new("ip")
        .args(["link", "delete", "rbdown0"])
        .status();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        "rw-tput-sender: port 1 of rxedown0 is DOWN, not ACTIVE (ibv_devinfo; is the link up?)\n"
    );
}

/// An experiment of one's own (examples/rw-mix.rs, written on the public framework API only):
/// run-local.sh starts its roles from the binary's `--describe`, both sides end cleanly, every
/// counting thread counts, and the results reader (what compare and plot read through) finds
/// rw-mix's point in what it printed; compare and plot take the file.
#[test]
fn an_example_benchmark_runs_through_run_local_compare_and_plot() {
    let bins = std::path::Path::new(env!("CARGO_BIN_EXE_rw-tput-sender"))
        .parent()
        .unwrap();
    assert!(
        bins.join("examples/rw-mix").exists(),
        "the example is built with the tests (cargo test builds examples)"
    );
    let args = [
        "rw-mix",
        "--read-pct",
        "50",
        "--postlist",
        "4",
        "--num-threads",
        "2",
    ];
    let out = Command::new("bench_scripts/run-local.sh")
        .args(args)
        .args(["--duration", SECS, "--json"])
        .env("RDMA_BENCH_BIN_DIR", bins)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let side = |label: &str| -> String {
        let prefix = format!("[{label}] ");
        text.lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let mops = check_counting(&side("server"), "Server", 2, "rw-mix", "MIX");
    check_passive(&side("client"), "rw-mix");
    let points = rdma_bench::tools::results::points_of_text(&text).unwrap();
    let p = points
        .iter()
        .find(|p| p.bench == "rw-mix")
        .unwrap_or_else(|| panic!("no rw-mix point in {points:?}"));
    assert_eq!(
        (p.key.op.as_deref(), p.key.size, p.key.postlist),
        (Some("MIX"), Some(32), Some(4)),
        "{p:?}"
    );
    let read = p
        .metrics
        .get(rdma_bench::tools::results::Metric::Mops)
        .unwrap();
    // The summary line prints 4 decimals; the reader takes the JSON's full value.
    assert!((read - mops).abs() <= 5.1e-5, "{read} vs {mops}");
    let dir = std::env::temp_dir().join(format!("rw-mix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rw-mix.txt");
    std::fs::write(&file, &text).unwrap();
    let tool = env!("CARGO_BIN_EXE_rdma-bench");
    let cmp = Command::new(tool)
        .arg("compare")
        .args([&file, &file])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.status.success() && table.contains("rw-mix"), "{table}");
    let svg = dir.join("rw-mix.svg");
    let plot = Command::new(tool)
        .arg("plot")
        .arg(&file)
        .arg("-o")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        plot.status.success() && std::fs::read_to_string(&svg).unwrap().contains("<svg"),
        "{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A role that fails during setup stops the others at once: here HERD's worker refuses a
/// postlist above the number of clients, and the master and the client, which would otherwise
/// wait out their connect timeout (60 s) for it, are stopped within seconds; the worker's own
/// line is what the user sees, and the script exits with its code.
#[test]
fn run_local_stops_every_role_when_one_fails_in_setup() {
    let bins = std::path::Path::new(env!("CARGO_BIN_EXE_herd"))
        .parent()
        .unwrap();
    let started = std::time::Instant::now();
    let out = Command::new("bench_scripts/run-local.sh")
        .args([
            "herd",
            "--num-workers",
            "1",
            "--num-clients",
            "1",
            "--num-threads",
            "1",
        ])
        .args([
            "--num-keys",
            "64Ki",
            "--num-buckets",
            "16Ki",
            "--log-bytes",
            "8MiB",
        ])
        .args(["--postlist", "32", "--duration", "5"])
        .env("RDMA_BENCH_BIN_DIR", bins)
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("[worker] herd: --postlist (32) exceeds --num-clients (1)"),
        "{err}"
    );
    assert!(
        err.contains("run-local.sh: the worker exited 1; stopping the other roles"),
        "{err}"
    );
    assert!(
        took < std::time::Duration::from_secs(30),
        "the other roles were not stopped at once: {took:?}\n{err}"
    );
}
