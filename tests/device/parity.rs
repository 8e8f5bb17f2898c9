//! What the perftest comparison relies on, checked on a real device: lazy reaping (a full send
//! queue that still never overflows, data intact), and one-thread runs staying one-thread
//! processes (so that glibc keeps rxe's doorbell write() off its cancellation path). The
//! perftest-compatible tools themselves are tested in tests/device/perf.rs.

use crate::common::bench_run;
use crate::common::memcached;

use std::time::{Duration, Instant};

use bench_run::{check_counting, check_passive, finish, run_pair, spawn, SECS};
use memcached::Memcached;

#[test]
fn lazy_reaping_fills_the_queue_and_keeps_the_data() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    let w = [
        "--size",
        "32",
        "--postlist",
        "16",
        "--unsig-batch",
        "16",
        "--reap",
        "lazy",
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
        "--size",
        "32",
        "--postlist",
        "4",
        "--unsig-batch",
        "8",
        "--do-read",
        "1",
        "--reap",
        "lazy",
        "--verify",
        "1",
    ];
    let (s, c) = run_pair(bin, &r, &r, SECS, "60");
    check_counting(&s, "Server", 1, "rw-tput-sender", "READ");
    assert!(
        s.contains("main: verify ok: 4 READ slot(s) of 32 bytes"),
        "{s}"
    );
    check_passive(&c, "rw-tput-sender");
}

fn tasks(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn one_thread_runs_are_one_thread_processes_and_still_report() {
    let bin = env!("CARGO_BIN_EXE_rw-tput-sender");
    for (threads, expect_tasks) in [("1", 1usize), ("2", 3)] {
        let m = Memcached::start();
        let a = ["--num-threads", threads, "--size", "32"];
        let started = Instant::now();
        // 5 s, not SECS: threads meet their peers up to ~1 s apart (each waits for a heartbeat),
        // and --duration counts from the run's first operation, so the last thread needs room
        // for two rate lines.
        let mut server = spawn(bin, &m, &a, "5");
        let mut ca = a.to_vec();
        ca.extend(["--is-client", "1"]);
        let client = spawn(bin, &m, &ca, "60");
        // The most tasks the server ever has while it connects, measures and reports.
        let mut most = 0;
        while server.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(60) {
            most = most.max(tasks(server.id()));
            std::thread::sleep(Duration::from_millis(200));
        }
        let s = finish(server, "server");
        assert_eq!(most, expect_tasks, "{threads} worker(s): {most} tasks\n{s}");
        // The report and the --duration deadline work without the reporter thread.
        check_counting(
            &s,
            "Server",
            threads.parse().unwrap(),
            "rw-tput-sender",
            "WRITE",
        );
        let rate_lines = s
            .lines()
            .filter(|l| l.starts_with("main: Server 0: "))
            .count();
        assert!(rate_lines >= 2, "one rate line a second expected:\n{s}");
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "--duration did not end the run"
        );
        check_passive(&finish(client, "client"), "rw-tput-sender");
    }
}
