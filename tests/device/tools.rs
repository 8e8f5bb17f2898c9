//! rdma-bench's tools on a real device (Soft-RoCE in the testbed).

use crate::common::bench_run;

use std::process::Command;

use bench_run::{check_counting, check_passive, run_pair};

/// The testbed's device, its ACTIVE port and the GID index the testbed chose: doctor must find
/// them all, pick the same GID, flag the software device, and fail nothing.
#[test]
fn doctor_sees_the_testbed_device_as_the_benchmarks_do() {
    let dev = std::env::var("RDMA_BENCH_DEVICE")
        .expect("RDMA_BENCH_DEVICE is not set: device tests run through bench_scripts/test.sh");
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-bench"))
        .args(["doctor", "--device", &dev])
        // mlx5's variable, which a non-mlx5 device must not be judged by.
        .env("MLX5_SINGLE_THREADED", "0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "doctor failed on {dev}:\n{text}");
    assert!(
        text.contains(&format!("[ok  ] port {dev}:1: ACTIVE (LinkUp), ")),
        "{text}"
    );
    assert!(
        text.contains("[ok  ] build: built against the system's rdma-core: ibv_wr_* post API on, ibv_query_gid_ex on, librdmacm on"),
        "{text}"
    );
    if let Ok(gid) = std::env::var("RDMA_BENCH_GID_INDEX") {
        assert!(
            text.contains(&format!("our tools use index {gid} (RoCE v2, IPv4)")),
            "{text}"
        );
    }
    if dev.starts_with("rxe") || dev.starts_with("siw") {
        assert!(
            text.contains(&format!(
                "[ok  ] device {dev}: provider environment: none to set"
            )),
            "{text}"
        );
    }
    if dev.starts_with("rxe") {
        assert!(
            text.contains(&format!("[warn] device {dev}: a software RDMA device")),
            "{text}"
        );
        // rxe has hw_counters: the port's error counters are looked at (earlier tests of this
        // boot may have moved them).
        let ok = format!("[ok  ] port {dev}:1: ");
        let warn = format!(
            "[warn] port {dev}:1: error counters already above 0 (since the driver loaded): "
        );
        assert!(
            text.lines().any(|l| (l.starts_with(&ok)
                && l.ends_with(" counters, no error counter above 0"))
                || l.starts_with(&warn)),
            "{text}"
        );
    }
    assert!(
        text.lines()
            .last()
            .unwrap_or("")
            .starts_with("doctor: 0 fail, "),
        "{text}"
    );
}

/// Stability mode: a 20 s run with a 2 s interval writes exactly 10 rows per counting thread
/// (rows fall on the interval's grid from the first operation), with the documented columns,
/// rates that agree with the row's own counts, and a drift summary at the end.
#[test]
fn stability_mode_writes_rows_per_thread_and_judges_drift() {
    let dir = std::env::temp_dir().join(format!("rdma-bench-stability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("rates.csv");
    let file_arg = file.to_str().unwrap();
    let a = [
        "--num-threads",
        "2",
        "--size",
        "32",
        "--postlist",
        "4",
        "--stats-interval",
        "2",
        "--stats-file",
        file_arg,
    ];
    let (s, c) = run_pair(env!("CARGO_BIN_EXE_rw-tput-sender"), &a, &a, "20", "90");
    check_counting(&s, "Server", 2, "rw-tput-sender", "WRITE");
    check_passive(&c, "rw-tput-sender");
    let csv = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let mut rows = csv.lines();
    assert_eq!(
        rows.next(),
        Some("unix_time_s,elapsed_s,thread,interval_s,ops,mops")
    );
    let rows: Vec<Vec<f64>> = rows
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    for t in 0..2 {
        let mine: Vec<&Vec<f64>> = rows.iter().filter(|r| r[2] == t as f64).collect();
        assert_eq!(mine.len(), 10, "thread {t}: 10 rows of 2 s in 20 s:\n{csv}");
        let mut last_ops = 0.0;
        for r in &mine {
            assert!(r[0] > 1.7e9, "a unix time: {r:?}");
            assert!(r[3] > 0.0 && r[3] < 3.0, "an interval near 2 s: {r:?}");
            assert!(r[4] > last_ops, "ops grow every interval: {r:?}");
            let mops = (r[4] - last_ops) / r[3] / 1e6;
            assert!(
                (mops - r[5]).abs() <= 1e-5 + mops * 1e-3,
                "rate = ops / interval: {r:?}"
            );
            last_ops = r[4];
        }
        assert!(
            mine.last().unwrap()[1] > 19.0,
            "the last row at the end of the run: {mine:?}"
        );
    }
    assert!(
        s.contains("main: stability: 10 intervals of 2 s in ") && s.contains("first→last tenth"),
        "{s}"
    );
    assert!(
        s.contains("\"stability\":true,\"intervals\":10,\"interval_s\":2.0"),
        "{s}"
    );
    // The passive side was given the same flags and wrote nothing.
    assert!(!c.contains("main: stability"), "{c}");
}
