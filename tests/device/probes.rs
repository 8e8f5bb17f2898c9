//! The three WRITE-visibility probes (write-reordering, write-incomplete, write-flush) for a few
//! seconds on a real device, and the mixed inline-WRITE/READ chain write-flush posts. The probes
//! report findings, so the tests check that each finding is reported and consistent, never what
//! it is (Soft-RoCE is expected to show no violation, but nothing here depends on it).

use crate::common;
use crate::common::bench_run;
use crate::common::memcached;

use std::process::Command;

use bench_run::{device_args, finish_all, spawn};
use common::{env, pair, Side};
use memcached::Memcached;
use rdma_bench::hot::{poll_one, Op, PollTimeout, Remote, SendBatch, SendSpec};
use rdma_bench::verbs::QpType;

/// Every JSON line of `out`, parsed (a line that does not parse fails the test).
fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON {l}: {e}")))
        .collect()
}

fn summary(out: &str) -> serde_json::Value {
    json_lines(out)
        .into_iter()
        .find(|v| v["summary"] == true)
        .unwrap_or_else(|| panic!("no JSON summary:\n{out}"))
}

/// The numbers of `line` that follow `prefix`, split on what is not part of a number.
fn numbers_after(line: &str, prefix: &str) -> Option<Vec<f64>> {
    let rest = line.strip_prefix(prefix)?;
    Some(
        rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter_map(|w| w.trim_matches('.').parse().ok())
            .collect(),
    )
}

#[test]
fn write_reordering_server_reports_checks_and_violations() {
    let bin = env!("CARGO_BIN_EXE_write-reordering");
    let m = Memcached::start();
    let server = spawn(bin, &m, &[], "60");
    let client = spawn(bin, &m, &["--is-client", "1"], "3");
    let outs = finish_all(vec![(client, "client"), (server, "server")]);
    let (c, s) = (&outs[0], &outs[1]);

    // Once a second: "main: Server: <checks> checks, <violations> violations, counter sample = <n>".
    let ticks: Vec<Vec<f64>> = s
        .lines()
        .filter_map(|l| numbers_after(l, "main: Server: "))
        .filter(|n| n.len() == 3)
        .collect();
    assert!(!ticks.is_empty(), "no per-second line:\n{s}");
    assert!(
        ticks.iter().all(|n| n[0] > 0.0),
        "a second without checks:\n{s}"
    );
    let last = s
        .lines()
        .find(|l| l.contains(" observed in ") && l.starts_with("main: Server: "))
        .unwrap_or_else(|| panic!("no summary line:\n{s}"));
    let sum = summary(s);
    assert_eq!(sum["bench"], "write-reordering");
    assert_eq!(sum["role"], "server");
    assert_eq!(sum["ok"], true);
    let checks = sum["checks"].as_u64().expect("checks");
    let violations = sum["violations"].as_u64().expect("violations");
    assert!(checks > 0, "{s}");
    assert!(violations <= checks);
    assert!(
        sum["counter_sample"].as_u64().expect("counter_sample") > 0,
        "the server never saw a round of the client's:\n{s}"
    );
    if violations == 0 {
        assert!(
            last.contains(&format!("no violation observed in {checks} checks")),
            "{last}"
        );
    } else {
        assert!(last.contains(&format!(
            "{violations} violations observed in {checks} checks"
        )));
        let printed = sum["first_violations"]
            .as_array()
            .expect("first_violations");
        assert_eq!(printed.len() as u64, violations.min(10));
        assert!(printed
            .iter()
            .all(|v| v["loc1"].as_u64() < v["loc2"].as_u64()
                && v["val2"].as_u64() > v["val1"].as_u64()));
    }
    eprintln!("write-reordering on this device: {violations} violations in {checks} checks");

    let cs = summary(c);
    assert_eq!(
        (cs["bench"].as_str(), cs["ok"].as_bool()),
        (Some("write-reordering"), Some(true))
    );
    assert!(cs["rounds"].as_u64().expect("rounds") > 0, "{c}");
    assert!(c.contains("main: Client: wrote "), "{c}");
}

/// write-incomplete alone (two threads, no registry) for `secs`; returns its stdout.
fn incomplete(extra: &[&str], secs: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_write-incomplete"))
        .args(extra)
        .args(device_args())
        .args(["--duration", secs, "--json"])
        .output()
        .expect("write-incomplete runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "write-incomplete {extra:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn write_incomplete_reports_its_finding() {
    for (extra, secs) in [
        (&["--do-read", "1"][..], "3"),
        (&["--do-read", "0"][..], "2"),
    ] {
        let out = incomplete(extra, secs);
        let sum = summary(&out);
        assert_eq!(sum["bench"], "write-incomplete");
        assert_eq!(sum["do_read"], extra[1] == "1", "{out}");
        let checks = sum["checks"].as_u64().expect("checks");
        let writes = sum["writes"].as_u64().expect("writes");
        let observations = sum["observations"].as_u64().expect("observations");
        assert!(checks > 0 && writes > 0, "{out}");
        assert_eq!(sum["observed"], observations > 0);
        let finding = out
            .lines()
            .find_map(|l| l.strip_prefix("main: finding: "))
            .unwrap_or_else(|| panic!("no finding line:\n{out}"));
        if observations == 0 {
            assert!(
                finding.starts_with(&format!(
                    "not observed in {checks} checks over {writes} completed WRITEs"
                )),
                "{finding}"
            );
            assert!(finding.contains("this does not prove"), "{finding}");
        } else {
            assert!(
                finding.starts_with(&format!("observed {observations} times in {checks} checks")),
                "{finding}"
            );
        }
        assert!(finding.contains("§9.7.5.1.6"), "{finding}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("main: ") && l.contains(" WRITEs completed, ")),
            "no per-second line:\n{out}"
        );
        eprintln!("write-incomplete {extra:?}: {finding}");
    }
}

#[test]
fn write_flush_client_prints_percentiles() {
    let bin = env!("CARGO_BIN_EXE_write-flush");
    let m = Memcached::start();
    let server = spawn(bin, &m, &[], "60");
    let client = spawn(bin, &m, &["--is-client", "1", "--verify", "1"], "3");
    let outs = finish_all(vec![(client, "client"), (server, "server")]);
    let (c, s) = (&outs[0], &outs[1]);

    // Once a second: "main: Client: avg <a> us, 50 <p50> us, 99 <p99> us (<n> flushes)".
    let ticks: Vec<Vec<f64>> = c
        .lines()
        .filter_map(|l| numbers_after(l, "main: Client: avg "))
        .collect();
    assert!(!ticks.is_empty(), "no per-second line:\n{c}");
    for t in &ticks {
        let (avg, p50, p99, n) = (t[0], t[2], t[4], t[5]);
        assert_eq!(t[1], 50.0, "{t:?}");
        assert!(
            avg > 0.0 && 0.0 < p50 && p50 <= p99 && n > 0.0,
            "{t:?}:\n{c}"
        );
    }
    let sum = summary(c);
    assert_eq!(
        (sum["bench"].as_str(), sum["ok"].as_bool()),
        (Some("write-flush"), Some(true))
    );
    assert_eq!(sum["num_writes"], 2);
    assert!(sum["samples"].as_u64().expect("samples") > 0);
    let q: Vec<f64> = ["min_us", "median_us", "p99_us", "p999_us", "max_us"]
        .iter()
        .map(|k| sum[*k].as_f64().unwrap_or_else(|| panic!("{k} in {sum}")))
        .collect();
    assert!(q[0] > 0.0 && q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
    assert!(c.contains("main: Client: flush latency over "), "{c}");
    assert!(
        c.contains("main: verify ok: the last chain's 2 READ(s)"),
        "{c}"
    );
    eprintln!(
        "write-flush on this device: median {:.1} us, 99th {:.1} us",
        q[1], q[2]
    );

    let ss = summary(s);
    assert_eq!(
        (ss["role"].as_str(), ss["ok"].as_bool()),
        (Some("server"), Some(true))
    );
    assert!(
        ss["observations"].as_u64().expect("observations")
            <= ss["checks"].as_u64().expect("checks")
    );
    assert!(s.contains("checks of the words at offsets 0 and 64"), "{s}");
}

#[test]
fn one_doorbell_mixes_inlined_writes_and_reads() {
    let t = PollTimeout::new(rdma_bench::control::Attention::detached());
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let remote = |s: &Side| Remote {
        addr: s.mr.addr() as u64,
        rkey: s.mr.rkey(),
        len: s.mr.len() as u64,
    };
    let spec = SendSpec {
        op: Op::Write,
        postlist: 4,
        size: 16,
        stride: 32,
        local_offset: 0,
        remote_offset: 0,
        inline: false,
    };
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, spec, Some(remote(&b))).unwrap();
    batch.set_signaled(3, true);
    for i in 0..2 {
        batch.set_inline(2 * i, true).unwrap();
        batch
            .retarget(2 * i + 1, Op::Read, (i * 64) as u64)
            .unwrap();
    }
    // A READ cannot be inline, nor an inlined WR become a READ.
    assert!(batch.set_inline(1, true).is_err());
    assert!(batch.retarget(0, Op::Read, 0).is_err());
    for round in 1..=3u64 {
        for i in 0..2 {
            a.mr.store_u64(i * 64, round * 10 + i as u64);
        }
        batch.post(&mut a.qp).unwrap();
        poll_one(a.qp.send_cq(), t).unwrap();
        for i in 0..2 {
            assert_eq!(b.mr.load_u64(i * 64), round * 10 + i as u64, "WRITE {i}");
            assert_eq!(
                a.mr.load_u64(i * 64 + 32),
                round * 10 + i as u64,
                "READ {i}"
            );
        }
        // Moving the signal rewrites only the SIGNALED bit of each WR's flags.
        batch.set_signaled(3, false);
        batch.set_signaled(3, true);
    }
    // A batch too large to inline refuses it.
    let big = SendSpec {
        size: 4000,
        postlist: 1,
        ..spec
    };
    let mut big = SendBatch::new(&mut a.qp, &a.mr, big, Some(remote(&b))).unwrap();
    assert!(big.set_inline(0, true).is_err());
}
