//! The perftest-compatible tools on a real device: ours against ours for every tool, and against
//! Debian's perftest in both directions (perftest's server with our client, ours with its
//! client), parsing both sides' tables. A pair that deadlocks, hits a remote access error or
//! disagrees on sizes and iterations fails here.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::perftest_pair;
use crate::common::stdout::read_stdout_until;

mod flags;

use perftest_pair::{check_bw, check_lat, env, next_port, table, wait, On, Who, BW_HEADER};

/// `perftest_pair::command` on the testbed's device.
fn command(who: Who, tool: &str, args: &[&str], port: u16, server: Option<&str>) -> Command {
    perftest_pair::command(&On::testbed(), who, tool, args, port, server)
}

/// `perftest_pair::pair` on the testbed's device.
fn pair(tool: &str, server: Who, client: Who, args: &[&str]) -> (String, String) {
    perftest_pair::pair(&On::testbed(), tool, server, client, args)
}

fn run_bw(tool: &str, server: Who, client: Who, extra: &[&str]) {
    perftest_pair::run_bw(&On::testbed(), tool, server, client, extra)
}

fn run_lat(tool: &str, server: Who, client: Who) {
    perftest_pair::run_lat(&On::testbed(), tool, server, client)
}

const BW_TOOLS: [&str; 4] = ["write-bw", "read-bw", "send-bw", "atomic-bw"];
const LAT_TOOLS: [&str; 4] = ["write-lat", "read-lat", "send-lat", "atomic-lat"];

#[test]
fn every_tool_against_itself() {
    for t in BW_TOOLS {
        run_bw(t, Who::Ours, Who::Ours, &[]);
    }
    for t in LAT_TOOLS {
        run_lat(t, Who::Ours, Who::Ours);
    }
    // Doorbell batching with the post list as CQ moderation, and several QPs.
    run_bw("write-bw", Who::Ours, Who::Ours, &["-l", "16"]);
    run_bw("read-bw", Who::Ours, Who::Ours, &["-q", "3"]);
    run_bw(
        "read-bw",
        Who::Ours,
        Who::Ours,
        &["--perform_warm_up", "-l", "16"],
    );
}

#[test]
fn bw_tools_against_perftest_both_ways() {
    for t in BW_TOOLS {
        run_bw(t, Who::Perftest, Who::Ours, &[]);
        run_bw(t, Who::Ours, Who::Perftest, &[]);
    }
    run_bw("write-bw", Who::Perftest, Who::Ours, &["-l", "16"]);
    run_bw(
        "write-bw",
        Who::Ours,
        Who::Perftest,
        &["-l", "16", "-q", "2"],
    );
}

#[test]
fn lat_tools_against_perftest_both_ways() {
    for t in ["write-lat", "read-lat", "send-lat"] {
        run_lat(t, Who::Perftest, Who::Ours);
        run_lat(t, Who::Ours, Who::Perftest);
    }
}

/// `-b`: both sides post; each prints the sum of both directions, ours with perftest both ways.
#[test]
fn bidirectional_runs_sum_both_directions() {
    for (t, server, client) in [
        ("write-bw", Who::Ours, Who::Ours),
        ("write-bw", Who::Perftest, Who::Ours),
        ("read-bw", Who::Ours, Who::Perftest),
        ("atomic-bw", Who::Perftest, Who::Ours),
        ("send-bw", Who::Ours, Who::Ours),
        ("send-bw", Who::Perftest, Who::Ours),
        ("send-bw", Who::Ours, Who::Perftest),
    ] {
        let mut args = vec!["-b", "-n", "512"];
        if t != "atomic-bw" {
            args.extend(["-s", "64"]);
        }
        let (so, co) = pair(t, server, client, &args);
        let (sr, cr) = (table(&so, BW_HEADER), table(&co, BW_HEADER));
        assert_eq!((sr.len(), cr.len()), (1, 1), "{t}:\n{so}\n{co}");
        // Both sides print the same sum (each its own plus the other's report).
        assert_eq!(
            (sr[0][0], sr[0][1]),
            (cr[0][0], cr[0][1]),
            "{t}:\n{so}\n{co}"
        );
        assert!((sr[0][3] - cr[0][3]).abs() <= 0.02, "{t}:\n{so}\n{co}");
        for (who, out) in [(server, &so), (client, &co)] {
            if who == Who::Ours {
                assert!(out.contains(" Bidirectional BW Test"), "{out}");
                assert!(table(out, BW_HEADER)[0][4] > 0.0, "{out}");
            }
        }
    }
    let (so, co) = pair(
        "write-bw",
        Who::Ours,
        Who::Ours,
        &["-b", "--report-both", "-n", "512"],
    );
    for out in [&so, &co] {
        assert!(
            out.contains("\n Local results: \n") && out.contains("\n Remote results: \n"),
            "{out}"
        );
    }
}

/// `-c UC`: WRITE and SEND over unreliable connections, both ways against perftest.
#[test]
fn uc_runs_write_and_send_tools() {
    for (t, server, client) in [
        ("write-bw", Who::Ours, Who::Ours),
        ("write-bw", Who::Perftest, Who::Ours),
        ("send-bw", Who::Ours, Who::Perftest),
        ("send-bw", Who::Perftest, Who::Ours),
    ] {
        run_bw(t, server, client, &["-c", "UC"]);
    }
    for (t, server, client) in [
        ("write-lat", Who::Ours, Who::Perftest),
        ("send-lat", Who::Perftest, Who::Ours),
    ] {
        let (so, co) = pair(t, server, client, &["-c", "UC", "-n", "100", "-s", "8"]);
        check_lat(t, &so, &co, &[8], 100);
        assert!(co.contains(" Connection type : UC"), "{co}");
    }
}

/// `-c UD`: datagram SENDs through address handles, both ways against perftest; a size above
/// the MTU shrinks to it when not asked for, as perftest's does.
#[test]
fn ud_runs_the_send_tools() {
    for (server, client) in [
        (Who::Ours, Who::Ours),
        (Who::Perftest, Who::Ours),
        (Who::Ours, Who::Perftest),
    ] {
        run_bw("send-bw", server, client, &["-c", "UD"]);
        let (so, co) = pair(
            "send-lat",
            server,
            client,
            &["-c", "UD", "-n", "100", "-s", "8"],
        );
        check_lat("send-lat", &so, &co, &[8], 100);
        assert!(co.contains(" Connection type : UD"), "{co}");
    }
    // The default 64 KiB becomes the MTU on both sides, ours with perftest's client.
    let (so, co) = pair(
        "send-bw",
        Who::Ours,
        Who::Perftest,
        &["-c", "UD", "-q", "2"],
    );
    let (sr, cr) = (table(&so, BW_HEADER), table(&co, BW_HEADER));
    let mtu = sr[0][0];
    assert!(
        [256.0, 512.0, 1024.0, 2048.0, 4096.0].contains(&mtu),
        "{so}"
    );
    assert_eq!((sr[0][0], sr[0][1]), (cr[0][0], cr[0][1]), "{so}\n{co}");
    assert!(sr[0][4] > 0.0, "{so}");
    // -R: the UD peer found through RDMA CM (SIDR), perftest on either side; latency and -b
    // also pass the client's QP number in a SEND with immediate.
    for (server, client) in [
        (Who::Ours, Who::Ours),
        (Who::Perftest, Who::Ours),
        (Who::Ours, Who::Perftest),
    ] {
        run_bw("send-bw", server, client, &["-c", "UD", "-R", "-q", "2"]);
        let (so, co) = pair(
            "send-lat",
            server,
            client,
            &["-c", "UD", "-R", "-n", "100", "-s", "8"],
        );
        check_lat("send-lat", &so, &co, &[8], 100);
    }
    let (so, co) = pair(
        "send-bw",
        Who::Perftest,
        Who::Ours,
        &["-c", "UD", "-R", "-b", "-s", "64", "-n", "512"],
    );
    let (sr, cr) = (table(&so, BW_HEADER), table(&co, BW_HEADER));
    assert_eq!((cr[0][0], cr[0][1]), (64.0, 512.0), "{co}");
    assert!((sr[0][3] - cr[0][3]).abs() <= 0.02, "{so}\n{co}");

    // Both directions at once over UD, with perftest's client.
    let (so, co) = pair(
        "send-bw",
        Who::Ours,
        Who::Perftest,
        &["-c", "UD", "-b", "-s", "64", "-n", "512"],
    );
    let (sr, cr) = (table(&so, BW_HEADER), table(&co, BW_HEADER));
    assert_eq!((sr[0][0], sr[0][1]), (64.0, 512.0), "{so}");
    assert!((sr[0][3] - cr[0][3]).abs() <= 0.02, "{so}\n{co}");
}

/// `-e`: every tool but WRITE's sleeps on completion events, against itself and perftest (the
/// events are local: the peer need not use them); `--cpu_util` adds the host's busy share of
/// the sampled window to `-D` rows.
#[test]
fn events_and_cpu_util() {
    for (t, server, client) in [
        ("send-bw", Who::Ours, Who::Ours),
        ("read-bw", Who::Ours, Who::Perftest),
        ("atomic-bw", Who::Perftest, Who::Ours),
    ] {
        let n = 1024;
        let mut args = vec!["-e", "-n", "1024"];
        if t != "atomic-bw" {
            args.extend(["-s", "64"]);
        }
        let (so, co) = pair(t, server, client, &args);
        let size = if t == "atomic-bw" { 8 } else { 64 };
        check_bw(t, &so, &co, &[size], n, (server, client));
        for (who, out) in [(server, &so), (client, &co)] {
            if who == Who::Ours {
                assert!(out.contains(" Test with events. Using "), "{out}");
            }
        }
    }
    for (t, server, client) in [
        ("send-lat", Who::Perftest, Who::Ours),
        ("read-lat", Who::Ours, Who::Ours),
    ] {
        let (so, co) = pair(t, server, client, &["-e", "-n", "200", "-s", "8"]);
        check_lat(t, &so, &co, &[8], 200);
    }
    // A vector the device does not have: one line, before any peer is contacted.
    let r = wait(
        command(
            Who::Ours,
            "read-bw",
            &["-e", "-X", "999"],
            next_port(),
            Some("127.0.0.1"),
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(
        r.err
            .starts_with("rdma-bench read-bw: Completion vector specified is invalid"),
        "{}",
        r.err
    );

    let cpu_bw = format!("{BW_HEADER}    CPU_Util[%]");
    let (so, co) = pair(
        "send-bw",
        Who::Ours,
        Who::Ours,
        &["-s", "64", "-D", "2", "--cpu_util"],
    );
    for out in [&so, &co] {
        let rows = table(out, &cpu_bw);
        assert_eq!(rows.len(), 1, "{out}");
        let cpu = rows[0][5];
        assert!(rows[0][1] > 0.0 && cpu > 0.0 && cpu <= 100.0, "{out}");
    }
    let cpu_lat = " #bytes        #iterations       t_avg[usec]    tps average    CPU_Util[%]";
    let (so, co) = pair(
        "write-lat",
        Who::Ours,
        Who::Ours,
        &["-s", "8", "-D", "2", "--cpu_util"],
    );
    for out in [&so, &co] {
        let rows = table(out, cpu_lat);
        assert_eq!(rows.len(), 1, "{out}");
        assert!(
            rows[0][1] > 0.0 && rows[0][4] > 0.0 && rows[0][4] <= 100.0,
            "{out}"
        );
    }
}

/// `-R`: the QPs connected through RDMA CM and the exchange over an RDMA CM QP, ours against
/// ours and against perftest both ways.
#[test]
fn rdma_cm_connects_every_tool() {
    for t in BW_TOOLS {
        run_bw(t, Who::Ours, Who::Ours, &["-R"]);
    }
    for (t, server, client) in [
        ("write-bw", Who::Perftest, Who::Ours),
        ("write-bw", Who::Ours, Who::Perftest),
        ("read-bw", Who::Ours, Who::Perftest),
        ("send-bw", Who::Perftest, Who::Ours),
        ("atomic-bw", Who::Ours, Who::Perftest),
    ] {
        run_bw(t, server, client, &["-R"]);
    }
    run_bw("write-bw", Who::Ours, Who::Perftest, &["-R", "-q", "3"]);
    for (t, server, client) in [
        ("write-lat", Who::Ours, Who::Ours),
        ("read-lat", Who::Ours, Who::Ours),
        ("atomic-lat", Who::Ours, Who::Ours),
        ("send-lat", Who::Ours, Who::Perftest),
        ("write-lat", Who::Perftest, Who::Ours),
    ] {
        let mut args = vec!["-R", "-n", "100"];
        if !t.starts_with("atomic") {
            args.extend(["-s", "8"]);
        }
        let (so, co) = pair(t, server, client, &args);
        check_lat(t, &so, &co, &[8], 100);
    }
}

// Size sweeps (-a), each in one connection. One test per pair, so that the two test threads
// share them: all five in one test took a minute.

/// The sizes of an -a sweep, as perftest's: 2 B to 8 MiB.
fn sweep_sizes() -> Vec<u64> {
    (1..24).map(|i| 1 << i).collect()
}

#[test]
fn size_sweep_write_bw_ours_both_sides() {
    let (s, c) = pair("write-bw", Who::Ours, Who::Ours, &["-a", "-n", "5"]);
    check_bw(
        "write-bw",
        &s,
        &c,
        &sweep_sizes(),
        5,
        (Who::Ours, Who::Ours),
    );
}

#[test]
fn size_sweep_send_lat_against_perftest_server() {
    let (s, c) = pair("send-lat", Who::Perftest, Who::Ours, &["-a", "-n", "5"]);
    check_lat("send-lat", &s, &c, &sweep_sizes(), 5);
}

#[test]
fn size_sweep_send_bw_against_perftest_client() {
    let (s, c) = pair("send-bw", Who::Ours, Who::Perftest, &["-a", "-n", "5"]);
    check_bw(
        "send-bw",
        &s,
        &c,
        &sweep_sizes(),
        5,
        (Who::Ours, Who::Perftest),
    );
}

/// A bidirectional sweep: send_bw's -b exchanges each size's reports before it meets,
/// write_bw's after.
fn bidirectional_sweep(t: &str) {
    let (s, c) = pair(t, Who::Perftest, Who::Ours, &["-b", "-a", "-n", "5"]);
    let (sr, cr) = (table(&s, BW_HEADER), table(&c, BW_HEADER));
    assert_eq!((sr.len(), cr.len()), (23, 23), "{t}:\n{s}\n{c}");
    for (a, b) in sr.iter().zip(&cr) {
        assert_eq!((a[0], a[1]), (b[0], b[1]), "{t}:\n{s}\n{c}");
    }
}

#[test]
fn size_sweep_send_bw_bidirectional() {
    bidirectional_sweep("send-bw");
}

#[test]
fn size_sweep_write_bw_bidirectional() {
    bidirectional_sweep("write-bw");
}

#[test]
fn duration_runs_count_the_window() {
    // Our client measures and perftest's server echoes it: under load perftest's own client
    // sometimes reports 0.000000 for a window it counted (seen once in CI).
    let (s, c) = pair(
        "write-bw",
        Who::Perftest,
        Who::Ours,
        &["-s", "64", "-D", "3"],
    );
    let (sr, cr) = (table(&s, BW_HEADER), table(&c, BW_HEADER));
    assert_eq!(sr.len(), 1, "{s}");
    // Duration mode has no peak; the iterations are what completed inside the window.
    assert_eq!((sr[0][0], sr[0][2]), (64.0, 0.0), "{s}");
    assert!(sr[0][1] > 0.0 && sr[0][3] > 0.0, "{s}");
    assert_eq!(sr[0][1], cr[0][1], "{s}\n{c}");
}

#[test]
fn json_output_is_valid_and_complete() {
    let dir = std::env::temp_dir().join(format!("perf-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sf, cf) = (dir.join("server.json"), dir.join("client.json"));
    let port = next_port();
    let sa = [
        "-s",
        "16",
        "-n",
        "100",
        "--out_json",
        "--out_json_file",
        sf.to_str().unwrap(),
    ];
    let ca = [
        "-s",
        "16",
        "-n",
        "100",
        "--out_json",
        "--out_json_file",
        cf.to_str().unwrap(),
    ];
    let s = command(Who::Ours, "write-lat", &sa, port, None)
        .spawn()
        .unwrap();
    let ip = env("RDMA_BENCH_IP");
    let c = command(Who::Ours, "write-lat", &ca, port, Some(&ip))
        .spawn()
        .unwrap();
    let (c, s) = (wait(c), wait(s));
    assert_eq!(
        (s.code, c.code),
        (0, 0),
        "{}{}\n{}{}",
        s.out,
        s.err,
        c.out,
        c.err
    );
    for f in [&sf, &cf] {
        let text = std::fs::read_to_string(f).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(v["test_info"]["test"], "RDMA_Write_Latency_Test", "{v}");
        assert_eq!(
            v["test_info"]["Device"],
            env("RDMA_BENCH_DEVICE").as_str(),
            "{v}"
        );
        assert_eq!(v["results"]["MsgSize"], 16, "{v}");
        assert_eq!(v["results"]["n_iterations"], 100, "{v}");
        assert!(v["results"]["t_typical"].as_f64().unwrap() > 0.0, "{v}");
        assert_eq!(v["all_results"].as_array().unwrap().len(), 1, "{v}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// No server: the client gives up after its --connect-timeout with one line.
#[test]
fn a_missing_server_is_a_bounded_wait() {
    let port = next_port();
    let t0 = Instant::now();
    let r = wait(
        command(
            Who::Ours,
            "write-bw",
            &["--connect-timeout", "2"],
            port,
            Some("127.0.0.1"),
        )
        .spawn()
        .unwrap(),
    );
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert!(
        r.err
            .starts_with("rdma-bench write-bw: no server answered at 127.0.0.1:"),
        "{}",
        r.err
    );
    assert_eq!(r.err.lines().count(), 1, "{}", r.err);
}

/// A peer that speaks an older perftest protocol is refused by name, not misread.
#[test]
fn an_old_peer_is_refused_by_version() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let mut theirs = [0u8; 16];
        sock.read_exact(&mut theirs).unwrap();
        let mut mine = [0u8; 16];
        mine[..4].copy_from_slice(b"5.60");
        sock.write_all(&mine).unwrap();
        String::from_utf8_lossy(&theirs)
            .trim_end_matches('\0')
            .to_string()
    });
    let r = wait(
        command(Who::Ours, "write-bw", &[], port, Some("127.0.0.1"))
            .spawn()
            .unwrap(),
    );
    assert_eq!(fake.join().unwrap(), "6.06");
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert_eq!(
        r.err,
        format!(
            "rdma-bench write-bw: 127.0.0.1:{port} speaks perftest protocol \"5.60\"; perftest 5.70 or later is needed\n"
        )
    );
}

/// Runs a `tool` pair of ours and interrupts the client after `after`; the client must exit
/// 130 and the server 0. Returns the client's and the server's tables.
fn interrupted(tool: &str, args: &[&str], stop: StopAt) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let port = next_port();
    let s = command(Who::Ours, tool, args, port, None).spawn().unwrap();
    let ip = env("RDMA_BENCH_IP");
    let mut c = command(Who::Ours, tool, args, port, Some(&ip))
        .spawn()
        .unwrap();
    let head = match stop {
        StopAt::Rows(n) => read_to_rows(&mut c, n),
        StopAt::HeaderThen(t) => {
            let head = read_stdout_until(&mut c, "the BW header", |l| l.trim_end() == BW_HEADER);
            std::thread::sleep(t);
            head
        }
    };
    // SAFETY: kill(2) on our own child's pid; `timeout` forwards the signal to the tool.
    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
    let (mut c, s) = (wait(c), wait(s));
    c.out = head + &c.out;
    assert_eq!(c.code, 130, "{}{}", c.out, c.err);
    assert_eq!(s.code, 0, "{}{}", s.out, s.err);
    let (cr, sr) = (table(&c.out, BW_HEADER), table(&s.out, BW_HEADER));
    assert!(!cr.is_empty() && !sr.is_empty(), "{}\n{}", s.out, c.out);
    (cr, sr)
}

/// When [`interrupted`] sends its SIGINT.
enum StopAt {
    /// Once the client has printed this many rows (runs that print one per window).
    Rows(usize),
    /// This long after the client has printed the header, i.e. connected (runs that print no row
    /// before their end).
    HeaderThen(Duration),
}

/// Reads `c`'s stdout up to its `n`th row under the BW header; returns what it read.
fn read_to_rows(c: &mut std::process::Child, n: usize) -> String {
    let (mut in_table, mut rows) = (false, 0);
    read_stdout_until(c, &format!("{n} rows"), |l| {
        let l = l.trim_end_matches('\n');
        if l == BW_HEADER {
            in_table = true;
        } else if in_table
            && l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<f64>().is_ok())
        {
            rows += 1;
        }
        rows >= n
    })
}

/// A write-bw pair interrupted: the server prints the client's last row.
fn interrupted_pair(args: &[&str], stop: StopAt) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let (cr, sr) = interrupted("write-bw", args, stop);
    assert_eq!(sr.len(), 1, "{sr:?}");
    assert_eq!(sr[0][1], cr.last().unwrap()[1], "{sr:?}\n{cr:?}");
    (cr, sr)
}

/// SIGINT in the middle: the client still prints what it measured, tells the server, and both
/// leave; the interrupted side exits 130.
#[test]
fn an_interrupted_run_still_reports() {
    let args = ["-s", "64", "-n", "100000000", "-N"];
    let (cr, _) = interrupted_pair(&args, StopAt::HeaderThen(Duration::from_secs(2)));
    assert_eq!(cr.len(), 1, "{cr:?}");
    assert!(cr[0][1] > 0.0 && cr[0][1] < 1e8 && cr[0][3] > 0.0, "{cr:?}");
}

/// `--run_infinitely`: a row every `-D` seconds until Ctrl-C; write-bw's server then prints the
/// client's last, send-bw's prints its own as it goes and ends when the client has stopped.
#[test]
fn run_infinitely_reports_every_window_until_stopped() {
    let args = ["-s", "64", "--run_infinitely", "-D", "1"];
    let (cr, _) = interrupted_pair(&args, StopAt::Rows(2));
    let (scr, ssr) = interrupted("send-bw", &args, StopAt::Rows(2));
    // -b: both sides post and print their own direction per window, until both are stopped.
    let port = next_port();
    let bargs = ["-s", "64", "-b", "--run_infinitely", "-D", "1"];
    let mut srv = command(Who::Ours, "write-bw", &bargs, port, None)
        .spawn()
        .unwrap();
    let ip = env("RDMA_BENCH_IP");
    let mut cli = command(Who::Ours, "write-bw", &bargs, port, Some(&ip))
        .spawn()
        .unwrap();
    let heads = [read_to_rows(&mut cli, 2), read_to_rows(&mut srv, 2)];
    for pid in [cli.id(), srv.id()] {
        // SAFETY: kill(2) on our own child's pid; `timeout` forwards the signal to the tool.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
    }
    let (mut bc, mut bs) = (wait(cli), wait(srv));
    let [hc, hs] = heads;
    bc.out = hc + &bc.out;
    bs.out = hs + &bs.out;
    let mut both = Vec::new();
    for r in [&bc, &bs] {
        assert_eq!(r.code, 130, "{}{}", r.out, r.err);
        both.push(table(&r.out, BW_HEADER));
    }
    for rows in [&cr, &scr, &ssr, &both[0], &both[1]] {
        assert!(rows.len() >= 2, "{rows:?}");
        for r in rows.iter() {
            assert!(
                r[0] == 64.0 && r[1] > 0.0 && r[2] == 0.0 && r[4] > 0.0,
                "{rows:?}"
            );
        }
    }
}
