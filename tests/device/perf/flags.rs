//! perftest 4.5's remaining flags on the device: each with what it changes checked, against
//! perftest where the flag is one both speak (`--output`, `--latency_gap`, `--recv_post_list`,
//! `--ipv6`), ours on both sides where perftest 4.5 cannot run it (`--dont_xchg_versions`, which
//! stops perftest at its version check) or where only the local side changes.

use std::time::{Duration, Instant};

use super::perftest_pair::{
    self, both_ok, check_bw, next_port, table, wait, On, Ran, Who, LAT_HEADER,
};

/// A server and its client with their own flags; neither's exit is judged here.
fn sides(on: &On, tool: &str, server: (Who, &[&str]), client: (Who, &[&str])) -> (Ran, Ran) {
    let port = next_port();
    let s = perftest_pair::command(on, server.0, tool, server.1, port, None)
        .spawn()
        .unwrap();
    if client.0 == Who::Perftest {
        let cm = server.1.iter().any(|a| matches!(*a, "-z" | "-R"));
        perftest_pair::wait_listening(port, cm);
    }
    let c = perftest_pair::command(on, client.0, tool, client.1, port, Some(&on.ip))
        .spawn()
        .unwrap();
    let c = wait(c);
    (wait(s), c)
}

/// One side of ours alone (a server unless `server` is given), refused or not: its exit code
/// and stderr.
fn run_alone(on: &On, tool: &str, args: &[&str], server: Option<&str>) -> (Option<i32>, String) {
    let o = perftest_pair::command(on, Who::Ours, tool, args, next_port(), server)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// stdout's lines: exactly `n`; where ours measured them (`ours`), each a positive number as
/// perftest prints it (`%lf`). perftest's own figures are not ours to check: its write-bw client
/// sometimes reports 0.000000 under load and its write-lat `--output=latency` printed "inf"
/// here; a server of ours prints what the client reported.
fn numbers(what: &str, out: &str, n: usize, ours: bool) {
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        n,
        "{what}: one number per size, nothing else:\n{out}"
    );
    if !ours {
        return;
    }
    for l in lines {
        let v: f64 = l
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{what}: {l:?} is not a number:\n{out}"));
        let decimals = l.trim().split('.').nth(1).map(str::len);
        assert_eq!(decimals, Some(6), "{what}: {l:?} is not %lf");
        assert!(v > 0.0, "{what}: {l:?}");
    }
}

#[test]
fn output_prints_one_number_as_perftest() {
    let on = On::testbed();
    // BW: the server prints the client's figure; ours against perftest's client.
    let args: &[&str] = &["-n", "200", "-s", "4096", "--output=bandwidth"];
    let (s, c) = sides(&on, "write-bw", (Who::Ours, args), (Who::Perftest, args));
    both_ok("write-bw --output=bandwidth", &s, &c);
    numbers("ib_write_bw client", &c.out, 1, false);
    // The server prints the client's figure, as perftest's: the same line.
    assert_eq!(s.out.trim(), c.out.trim(), "{}\n{}", s.out, c.out);
    let (s, c) = sides(&on, "write-bw", (Who::Perftest, args), (Who::Ours, args));
    both_ok("write-bw --output=bandwidth, our client", &s, &c);
    numbers("write-bw client", &c.out, 1, true);
    // Message rate, our client against perftest's server.
    let args: &[&str] = &["-n", "200", "-s", "64", "--output=message_rate"];
    let (s, c) = sides(&on, "send-bw", (Who::Perftest, args), (Who::Ours, args));
    both_ok("send-bw --output=message_rate", &s, &c);
    numbers("send-bw client", &c.out, 1, true);
    numbers("ib_send_bw server", &s.out, 1, false);
    // Latency: the average, on both sides of write-lat.
    let args: &[&str] = &["-n", "200", "-s", "8", "--output=latency"];
    let (s, c) = sides(&on, "write-lat", (Who::Ours, args), (Who::Perftest, args));
    both_ok("write-lat --output=latency", &s, &c);
    numbers("write-lat server", &s.out, 1, true);
    numbers("ib_write_lat client", &c.out, 1, false);
}

#[test]
fn latency_gap_is_in_every_sample() {
    let on = On::testbed();
    // 3 ms before each ping on the client: write-lat halves the round trip, read-lat does not.
    for (tool, at_least) in [("write-lat", 1500.0), ("read-lat", 3000.0)] {
        let plain: &[&str] = &["-n", "100", "-s", "8"];
        let gap: &[&str] = &["-n", "100", "-s", "8", "--latency_gap", "3000"];
        let (s, c) = sides(&on, tool, (Who::Perftest, plain), (Who::Ours, gap));
        both_ok(&format!("{tool} --latency_gap"), &s, &c);
        let rows = table(&c.out, LAT_HEADER);
        let (t_min, t_avg) = (rows[0][2], rows[0][5]);
        assert!(
            t_min >= at_least * 0.95 && t_avg >= at_least,
            "{tool}: a 3000 us gap before each ping, yet t_min {t_min}, t_avg {t_avg}:\n{}",
            c.out
        );
    }
}

#[test]
fn limits_fail_the_run_below_them() {
    let on = On::testbed();
    // Enough SENDs that the receiver's first and last RECV are some polls apart.
    let base: &[&str] = &["-n", "2000", "-s", "64"];
    // send-bw judges on both sides, as perftest's.
    let high: Vec<&str> = [base, &["-w", "1000000"]].concat();
    let (s, c) = sides(&on, "send-bw", (Who::Ours, &high), (Who::Ours, &high));
    for (side, r) in [("server", &s), ("client", &c)] {
        assert_eq!(
            r.code, 6,
            "{side}: a failed limit is a finding (exit 6):\n{}{}",
            r.out, r.err
        );
        assert!(
            r.err.contains("Error: BW result is below bw limit"),
            "{side}: {}",
            r.err
        );
        assert!(
            !table(&r.out, perftest_pair::BW_HEADER).is_empty(),
            "{side}: the row still prints"
        );
    }
    // -y alone judges too (perftest 4.5 checks it only with -w).
    let rate: Vec<&str> = [base, &["-y", "1000000"]].concat();
    let (s, c) = sides(&on, "write-bw", (Who::Ours, base), (Who::Ours, &rate));
    assert_eq!((s.code, c.code), (0, 6), "{}{}", c.out, c.err);
    assert!(
        c.err.contains("Error: Msg rate is below msg_rate limit"),
        "{}",
        c.err
    );
    // Limits met: a pass.
    let low: Vec<&str> = [base, &["-w", "0.001", "-y", "0.000001"]].concat();
    let (s, c) = sides(&on, "write-bw", (Who::Ours, base), (Who::Ours, &low));
    both_ok("write-bw under its limits", &s, &c);
}

#[test]
fn no_version_exchange_and_a_wait_before_destroy() {
    let on = On::testbed();
    let args: &[&str] = &["-n", "200", "-s", "64", "--dont_xchg_versions"];
    let slow: Vec<&str> = [args, &["--wait_destroy", "2"]].concat();
    let started = Instant::now();
    let (s, c) = sides(&on, "write-bw", (Who::Ours, args), (Who::Ours, &slow));
    let took = started.elapsed();
    both_ok("write-bw --dont_xchg_versions", &s, &c);
    check_bw(
        "write-bw",
        &s.out,
        &c.out,
        &[64],
        200,
        (Who::Ours, Who::Ours),
    );
    assert!(
        c.out
            .contains(" Waiting 2 seconds before releasing resources..."),
        "{}",
        c.out
    );
    assert!(took >= Duration::from_secs(2), "{took:?}");
}

#[test]
fn receives_chained_by_recv_post_list() {
    let on = On::testbed();
    let args: &[&str] = &["-n", "1000", "-s", "64", "--recv_post_list", "10"];
    // Our receiver against perftest's sender, and perftest's receiver against ours; our client
    // also takes the flags that change nothing here (perftest ignores them too).
    let quiet: Vec<&str> = [
        args,
        &[
            "--perform_warm_up",
            "--use_old_post_send",
            "--inline_recv",
            "0",
        ],
    ]
    .concat();
    for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
        let client_args: &[&str] = if client == Who::Ours { &quiet } else { args };
        let (s, c) = sides(&on, "send-bw", (server, args), (client, client_args));
        both_ok("send-bw --recv_post_list 10", &s, &c);
        check_bw("send-bw", &s.out, &c.out, &[64], 1000, (server, client));
        if client == Who::Ours {
            assert!(
                c.err.contains("--perform_warm_up has no effect in send-bw"),
                "{}",
                c.err
            );
        }
    }
}

#[test]
fn gid_and_path_flags() {
    let on = On::testbed();
    // --ipv6 without -x: both sides pick the port's IPv6 (link-local) GID, perftest's too.
    let v6 = On {
        gid_index: None,
        ..On::testbed()
    };
    let args: &[&str] = &["-n", "200", "-s", "64", "--ipv6"];
    let (s, c) = sides(&v6, "write-bw", (Who::Ours, args), (Who::Perftest, args));
    both_ok("write-bw --ipv6", &s, &c);
    for out in [&s.out, &c.out] {
        let gids: Vec<&str> = out.lines().filter(|l| l.starts_with(" GID:")).collect();
        assert_eq!(gids.len(), 2, "{out}");
        // fe80::/10 printed as perftest prints GID bytes, in decimal.
        assert!(
            gids.iter().all(|g| g.starts_with(" GID: 254:128:")),
            "{out}"
        );
    }
    // --force-link Ethernet on RoCE changes nothing; --dlid is the path's (and the line's) LID.
    let args: &[&str] = &[
        "-n",
        "200",
        "-s",
        "64",
        "--force-link",
        "Ethernet",
        "--dlid",
        "7",
    ];
    let (s, c) = sides(&on, "write-bw", (Who::Ours, args), (Who::Ours, args));
    both_ok("write-bw --force-link Ethernet --dlid 7", &s, &c);
    assert!(c.out.contains(" remote address: LID 0x07 "), "{}", c.out);
    // IB on a RoCE port is refused before any peer is reached.
    let (code, err) = run_alone(&on, "write-bw", &["--force-link", "IB"], None);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--force-link IB: ") && err.contains("is Ethernet (RoCE)"),
        "{err}"
    );
}

#[test]
fn buffers_in_a_file_and_odp_refused_by_soft_roce() {
    let on = On::testbed();
    let dir = std::env::temp_dir().join(format!("rdma-bench-mmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sf, cf) = (dir.join("server"), dir.join("client"));
    for f in [&sf, &cf] {
        std::fs::write(f, vec![0xAAu8; 1 << 20]).unwrap();
    }
    let (sa, ca) = (sf.to_str().unwrap(), cf.to_str().unwrap());
    let base = ["-n", "200", "-s", "4096"];
    let s_args: Vec<&str> = [&base[..], &["--mmap", sa]].concat();
    let c_args: Vec<&str> = [&base[..], &["--mmap", ca, "--mmap-offset", "0"]].concat();
    let (s, c) = sides(&on, "write-bw", (Who::Ours, &s_args), (Who::Ours, &c_args));
    both_ok("write-bw --mmap", &s, &c);
    // The buffer is the file's first pages: zeroed by the test, the rest untouched.
    let bytes = std::fs::read(&sf).unwrap();
    assert!(
        bytes[..8192].iter().all(|&b| b == 0),
        "the buffer is in the file"
    );
    assert!(bytes[bytes.len() - 4096..].iter().all(|&b| b == 0xAA));
    // A file shorter than the buffer is refused, naming the flag and the size it needs.
    std::fs::write(&cf, [0u8; 100]).unwrap();
    let (_s, c) = sides(&on, "write-bw", (Who::Ours, &base), (Who::Ours, &c_args));
    assert_eq!(c.code, 1, "{}", c.err);
    assert!(
        c.err.contains("--mmap ") && c.err.contains("truncate -s"),
        "{}",
        c.err
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // Soft-RoCE on Debian 12's kernel has no ODP: refused before any peer, in one line.
    let (code, err) = run_alone(&on, "read-bw", &["--odp"], None);
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    assert!(
        err.contains("--odp: ") && err.contains("does not support on-demand paging"),
        "{err}"
    );
}

#[test]
fn the_software_limiter_paces_the_posts() {
    let on = On::testbed();
    let plain: &[&str] = &["-n", "1024", "-s", "4096"];
    // 2 MB/s of 4 KiB WRITEs in bursts of 8: 512 a second, the 1024 in about 2 s.
    let paced: Vec<&str> = [
        plain,
        &[
            "--rate_limit_type",
            "SW",
            "--rate_limit",
            "2",
            "--rate_units",
            "M",
            "--burst_size",
            "8",
        ],
    ]
    .concat();
    let (s, c) = sides(&on, "write-bw", (Who::Perftest, plain), (Who::Ours, &paced));
    both_ok("write-bw paced at 2 MB/s", &s, &c);
    let avg = table(&c.out, perftest_pair::BW_HEADER)[0][3];
    assert!(
        (1.0..=2.2).contains(&avg),
        "paced at 2 MB/s, measured {avg}:\n{}",
        c.out
    );
    let (s, c) = sides(&on, "write-bw", (Who::Perftest, plain), (Who::Ours, plain));
    both_ok("write-bw unpaced", &s, &c);
    let free = table(&c.out, perftest_pair::BW_HEADER)[0][3];
    assert!(free > 2.0 * avg, "unpaced {free} MB/s against paced {avg}");
    println!("write-bw 4096 B: paced at 2 MB/s {avg} MB/s, unpaced {free} MB/s");
    // --rate_limit alone (HW) falls back to SW on RoCE, as perftest's.
    let pps: &[&str] = &[
        "-n",
        "1000",
        "-s",
        "64",
        "--rate_limit",
        "10",
        "--rate_units",
        "M",
    ];
    let (s, c) = sides(&on, "send-bw", (Who::Ours, &pps[..4]), (Who::Ours, pps));
    both_ok("send-bw --rate_limit 10", &s, &c);
    assert!(
        c.err
            .contains("The QP failed to accept HW rate limit, providing SW rate limit"),
        "{}",
        c.err
    );
    let rate = table(&c.out, perftest_pair::BW_HEADER)[0][3];
    assert!(
        rate <= 11.0,
        "{rate} MB/s against a 10 MB/s limit:\n{}",
        c.out
    );
    // HW by name fails on Ethernet before any peer is reached.
    let hw: &[&str] = &["--rate_limit_type", "HW", "--rate_limit", "10"];
    let (code, err) = run_alone(&on, "write-bw", hw, None);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("The QP failed to accept HW rate limit"),
        "{err}"
    );
}

#[test]
fn the_exchange_over_rdma_cm_with_z() {
    let on = On::testbed();
    // -z: the keys, versions and reports go over an RDMA CM connection; the test QPs are
    // connected from them as over TCP. Both ways against perftest.
    for tool in ["write-bw", "send-bw"] {
        let args: &[&str] = &["-n", "500", "-s", "64", "-z"];
        for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
            let (s, c) = sides(&on, tool, (server, args), (client, args));
            both_ok(&format!("{tool} -z"), &s, &c);
            check_bw(tool, &s.out, &c.out, &[64], 500, (server, client));
            let ours = if server == Who::Ours { &s.out } else { &c.out };
            assert!(
                ours.contains(" rdma_cm QPs\t : OFF")
                    && ours.contains(" Data ex. method : rdma_cm"),
                "{ours}"
            );
        }
    }
    let args: &[&str] = &["-n", "200", "-s", "8", "-z"];
    let (s, c) = sides(&on, "send-lat", (Who::Ours, args), (Who::Perftest, args));
    both_ok("send-lat -z", &s, &c);
    perftest_pair::check_lat("send-lat", &s.out, &c.out, &[8], 200);
}

#[test]
fn source_ip_binds_both_ends() {
    let on = On::testbed();
    let ip = on.ip.clone();
    let from: &[&str] = &["-n", "200", "-s", "64", "--source_ip", &ip];
    let plain: &[&str] = &["-n", "200", "-s", "64"];
    // Our client from the RDMA interface's address, against perftest's server; our server on
    // that address alone, against perftest's client.
    let (s, c) = sides(&on, "write-bw", (Who::Perftest, plain), (Who::Ours, from));
    both_ok("write-bw client --source_ip", &s, &c);
    let (s, c) = sides(&on, "write-bw", (Who::Ours, from), (Who::Perftest, plain));
    both_ok("write-bw server --source_ip", &s, &c);
    // -R: the CM listener and the client's route both take it.
    let cm: Vec<&str> = [from, &["-R"]].concat();
    let (s, c) = sides(&on, "read-bw", (Who::Ours, &cm), (Who::Ours, &cm));
    both_ok("read-bw -R --source_ip", &s, &c);
    // A server bound to that address does not answer on loopback.
    let port = next_port();
    let server = perftest_pair::command(&on, Who::Ours, "write-bw", from, port, None)
        .spawn()
        .unwrap();
    perftest_pair::wait_listening(port, false);
    let lo = On {
        ip: "127.0.0.1".into(),
        ..On::testbed()
    };
    let client: &[&str] = &["-n", "200", "-s", "64", "--connect-timeout", "2"];
    let c = wait(
        perftest_pair::command(&lo, Who::Ours, "write-bw", client, port, Some("127.0.0.1"))
            .spawn()
            .unwrap(),
    );
    assert_ne!(c.code, 0, "{}{}", c.out, c.err);
    assert!(
        c.err.contains("no server answered at 127.0.0.1"),
        "{}",
        c.err
    );
    // SIGTERM to `timeout`, which passes it on to the server (a Ctrl-C: it leaves at once).
    let _ = std::process::Command::new("kill")
        .arg(server.id().to_string())
        .status();
    wait(server);
    // An address this host does not have: one line, before anything is made.
    let (code, err) = run_alone(&on, "write-bw", &["--source_ip", "192.0.2.9"], Some(&ip));
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    assert!(
        err.contains("--source_ip 192.0.2.9: not an address of this host"),
        "{err}"
    );
}

#[test]
fn reversed_makes_the_server_post() {
    let on = On::testbed();
    // --reversed: the server posts and prints the measured rows, the client is the passive
    // side; the TCP exchange keeps its roles. Both ways against perftest, a one-sided tool and
    // SENDs, and ours on both sides.
    let args: &[&str] = &["-n", "300", "-s", "1024", "--reversed"];
    let runs = [
        ("write-bw", Who::Ours, Who::Perftest),
        ("write-bw", Who::Perftest, Who::Ours),
        ("send-bw", Who::Ours, Who::Perftest),
        ("send-bw", Who::Perftest, Who::Ours),
        ("read-bw", Who::Ours, Who::Ours),
    ];
    for (tool, server, client) in runs {
        let (s, c) = sides(&on, tool, (server, args), (client, args));
        both_ok(&format!("{tool} --reversed"), &s, &c);
        // The poster's table is the server's now: check it as a client's.
        check_bw(tool, &c.out, &s.out, &[1024], 300, (client, server));
    }
}

#[test]
fn a_shared_receive_queue_with_use_srq() {
    let on = On::testbed();
    // --use-srq: the receiving side's QPs take their RECVs from one SRQ of -r entries (the
    // wire does not change). send-bw with two QPs sharing it and send-lat, against perftest
    // both ways; send-bw -b, where both sides receive, ours with ours.
    let bw: &[&str] = &["-n", "400", "-s", "512", "-q", "2", "--use-srq"];
    for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
        let (s, c) = sides(&on, "send-bw", (server, bw), (client, bw));
        both_ok("send-bw --use-srq", &s, &c);
        // perftest counts every QP's messages: 2 × 400.
        check_bw("send-bw", &s.out, &c.out, &[512], 800, (server, client));
        let ours = if server == Who::Ours { &s.out } else { &c.out };
        assert!(ours.contains("Using SRQ      : ON"), "{ours}");
    }
    let duplex: &[&str] = &["-n", "400", "-s", "512", "-b", "--use-srq"];
    let (s, c) = sides(&on, "send-bw", (Who::Ours, duplex), (Who::Ours, duplex));
    both_ok("send-bw -b --use-srq", &s, &c);
    let lat: &[&str] = &["-n", "300", "-s", "64", "--use-srq"];
    for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
        let (s, c) = sides(&on, "send-lat", (server, lat), (client, lat));
        both_ok("send-lat --use-srq", &s, &c);
        perftest_pair::check_lat("send-lat", &s.out, &c.out, &[64], 300);
    }
}

/// The RKeys of `side`'s ("local" or "remote") address lines.
fn rkeys(out: &str, side: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.trim_start().starts_with(&format!("{side} address:")))
        .filter_map(|l| l.split(" RKey ").nth(1))
        .map(|r| r.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// Runs `c` (a tool under `timeout`) to its end, and says how many MRs its tool process held at
/// most meanwhile, by `rdma resource show mr` ten times a second.
fn most_mrs_while_running(c: &mut std::process::Child) -> usize {
    let children = format!("/proc/{0}/task/{0}/children", c.id());
    let mut most = 0;
    while c.try_wait().unwrap().is_none() {
        let tool = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(pid) = tool.split_whitespace().next() {
            let o = std::process::Command::new("rdma")
                .args(["resource", "show", "mr"])
                .output()
                .unwrap();
            let owned = format!(" pid {pid} ");
            let n = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains(&owned))
                .count();
            most = most.max(n);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    most
}

#[test]
fn one_memory_region_per_qp_with_mr_per_qp() {
    let on = On::testbed();
    // --mr_per_qp: each QP's buffer is registered on its own and its key sent in its own key
    // message (the wire is as without it). Each BW tool with two QPs against perftest both
    // ways. Ours must hold two MRs (counted by the kernel, held 2 s after the test by
    // --wait_destroy), and WRITE and READ show two distinct keys on each side.
    for tool in ["write-bw", "read-bw", "send-bw", "atomic-bw"] {
        let mut args = vec!["-n", "200", "-q", "2", "--mr_per_qp"];
        let size = if tool == "atomic-bw" {
            8
        } else {
            args.extend(["-s", "256"]);
            256
        };
        let mut ours_args = args.clone();
        ours_args.extend(["--wait_destroy", "2"]);
        for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
            let port = next_port();
            let side = |who: Who| if who == Who::Ours { &ours_args } else { &args };
            let mut s = perftest_pair::command(&on, server, tool, side(server), port, None)
                .spawn()
                .unwrap();
            if client == Who::Perftest {
                perftest_pair::wait_listening(port, false);
            }
            let mut c = perftest_pair::command(&on, client, tool, side(client), port, Some(&on.ip))
                .spawn()
                .unwrap();
            let mrs = if server == Who::Ours {
                most_mrs_while_running(&mut s)
            } else {
                most_mrs_while_running(&mut c)
            };
            let (s, c) = (wait(s), wait(c));
            both_ok(&format!("{tool} --mr_per_qp"), &s, &c);
            // perftest counts every QP's messages: 2 × 200.
            check_bw(tool, &s.out, &c.out, &[size], 400, (server, client));
            assert_eq!(mrs, 2, "{tool}: ours held {mrs} MRs at most");
            if matches!(tool, "write-bw" | "read-bw") {
                let ours = if server == Who::Ours { &s.out } else { &c.out };
                for side in ["local", "remote"] {
                    let keys = rkeys(ours, side);
                    assert!(
                        keys.len() == 2 && keys[0] != keys[1],
                        "{tool}: {side} keys {keys:?}\n{ours}"
                    );
                }
            }
        }
    }
}

/// This host's membership of the IPv4 group `group` on the testbed's address, held for a
/// perftest side that receives on it: perftest only attaches its QP, and Soft-RoCE in Debian
/// 12's kernel does not join at the IP layer, so without a member the group's datagrams never
/// reach the device. Ours joins by itself (the cases where ours receives take no member).
fn ip_member(on: &On, group: [u8; 4]) -> std::net::UdpSocket {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    s.join_multicast_v4(&group.into(), &on.ip.parse().unwrap())
        .unwrap();
    s
}

/// The index of the testbed device's IPv6 (not IPv4-mapped) RoCE v2 GID, and the interface
/// index of its netdev.
fn ipv6_roce_v2_gid(on: &On) -> (String, u32) {
    let port = format!("/sys/class/infiniband/{}/ports/1", on.device);
    let read = |p: String| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    for i in 0..16 {
        let gid = read(format!("{port}/gids/{i}"));
        if gid.starts_with("fe80:") && read(format!("{port}/gid_attrs/types/{i}")) == "RoCE v2" {
            let netdev = read(format!("{port}/gid_attrs/ndevs/{i}"));
            let ifindex = read(format!("/sys/class/net/{netdev}/ifindex"))
                .parse()
                .unwrap();
            return (i.to_string(), ifindex);
        }
    }
    panic!("{} has no IPv6 RoCE v2 GID", on.device);
}

#[test]
fn multicast_with_mcg_and_mgid() {
    let on = On::testbed();
    // -g: the receiving side's QP joins a group and the sender sends to it (UD, QPN 0xffffff).
    // The testbed's GIDs are IPv4, so the groups are IPv4-mapped (-M). send-bw and send-lat,
    // against perftest both ways; in send-lat each side receives on its own group.
    let groups = [
        ("0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1", [239, 1, 1, 1]),
        ("0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:2", [239, 1, 1, 2]),
    ];
    let mgid_line = "MGID: 00:00:00:00:00:00:00:00:00:00:255:255:239:01:01:01";
    for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
        let _member = (server == Who::Perftest).then(|| ip_member(&on, groups[0].1));
        let args: &[&str] = &["-n", "300", "-s", "512", "-g", "-M", groups[0].0];
        let (s, c) = sides(&on, "send-bw", (server, args), (client, args));
        both_ok("send-bw -g", &s, &c);
        check_bw("send-bw", &s.out, &c.out, &[512], 300, (server, client));
        let ours = if server == Who::Ours { &s.out } else { &c.out };
        assert!(
            ours.contains("Send BW Multicast Test")
                && ours.contains(" MultiCast runs on UD!")
                && ours.contains(mgid_line),
            "{ours}"
        );
        if server == Who::Ours {
            assert!(
                ours.contains("local address: LID 0000 QPN 0xffffff"),
                "{ours}"
            );
        }
    }
    for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
        let perftest_group = if server == Who::Perftest { 0 } else { 1 };
        let _member = ip_member(&on, groups[perftest_group].1);
        let (s, c) = sides(
            &on,
            "send-lat",
            (server, &["-n", "200", "-s", "64", "-g", "-M", groups[0].0]),
            (client, &["-n", "200", "-s", "64", "-g", "-M", groups[1].0]),
        );
        both_ok("send-lat -g", &s, &c);
        perftest_pair::check_lat("send-lat", &s.out, &c.out, &[64], 200);
    }
    // perftest's default group (ff01:0:2:c985::, IPv6) on the device's IPv6 RoCE v2 GID:
    // send-bw against perftest both ways. A perftest receiver gets this host's membership of
    // the group from the test, as above.
    let (v6_index, ifindex) = ipv6_roce_v2_gid(&on);
    let v6 = On {
        gid_index: Some(v6_index),
        ..On::testbed()
    };
    let args: &[&str] = &["-n", "300", "-s", "512", "-g"];
    for (server, client) in [(Who::Ours, Who::Perftest), (Who::Perftest, Who::Ours)] {
        let _member = (server == Who::Perftest).then(|| {
            let s = std::net::UdpSocket::bind("[::]:0").unwrap();
            let group: std::net::Ipv6Addr = "ff01:0:2:c985::".parse().unwrap();
            s.join_multicast_v6(&group, ifindex).unwrap();
            s
        });
        let (s, c) = sides(&v6, "send-bw", (server, args), (client, args));
        both_ok("send-bw -g (IPv6 default group)", &s, &c);
        check_bw("send-bw", &s.out, &c.out, &[512], 300, (server, client));
        let ours = if server == Who::Ours { &s.out } else { &c.out };
        assert!(
            ours.contains("MGID: 255:01:00:00:00:02:201:133:00:00:00:00:00:00:00:00"),
            "{ours}"
        );
    }
    // The same group on the IPv4 GID: refused at once, in one line.
    let (code, err) = run_alone(&on, "send-bw", &["-g"], None);
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    assert!(
        err.contains("-g/--mcg: the group ff01:") && err.contains("give -M an IPv4 group"),
        "{err}"
    );
}

/// `-o` above the device's `max_qp_rd_atom` (Soft-RoCE: 128) is clamped to it with perftest's
/// notice, by ours as by perftest, and the run goes on at that depth; a smaller `-o` on the
/// server is the depth the client's READs keep in flight (perftest's rule: the initiator takes
/// the peer's -o), within the device's limit, so nothing is said.
#[test]
fn read_depth_is_clamped_to_the_device() {
    let on = On::testbed();
    // The device's own limit, as ibv_devinfo reads it.
    let info = std::process::Command::new("ibv_devinfo")
        .args(["-v", "-d", &on.device])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    let max: u32 = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("max_qp_rd_atom:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no max_qp_rd_atom in ibv_devinfo -v:\n{info}"));
    assert!(
        max < 200,
        "{}: max_qp_rd_atom {max} does not clamp -o 200",
        on.device
    );
    let deep: &[&str] = &["-n", "200", "-s", "64", "-o", "200"];
    let notice =
        format!(" Number of outstanding reads is above max = {max}\n Changing to that max value");
    let header = format!(" Outstand reads  : {max}");
    for (server, client) in [(Who::Perftest, Who::Ours), (Who::Ours, Who::Perftest)] {
        let (s, c) = sides(&on, "read-bw", (server, deep), (client, deep));
        both_ok(&format!("read-bw -o 200, server {server:?}"), &s, &c);
        for (side, who, r) in [("server", server, &s), ("client", client, &c)] {
            assert!(r.out.contains(&header), "{side}:\n{}", r.out);
            // Ours says so on stderr, after a rule line on stdout, as perftest's ctx_set_out_reads
            // does (Debian's perftest 4.5 clamps its server silently).
            assert!(
                who == Who::Perftest || r.err.contains(&notice),
                "{side} of read-bw -o 200 ({server:?} serves):\n{}",
                r.err
            );
        }
    }
    let (s, c) = sides(
        &on,
        "read-bw",
        (Who::Ours, &["-n", "200", "-s", "64", "-o", "4"]),
        (Who::Ours, &["-n", "200", "-s", "64"]),
    );
    both_ok("read-bw, server -o 4", &s, &c);
    assert!(s.out.contains(" Outstand reads  : 4"), "{}", s.out);
    assert!(!c.err.contains("READs/atomics in flight"), "{}", c.err);
}
