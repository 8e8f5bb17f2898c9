//! `rdma-bench kv-bench` from the outside: bad sizes and runs bigger than the machine are refused
//! in one line before anything is allocated, and a small run of each workload prints a line per
//! pass and a summary. Host-only (the store needs no RDMA).

use std::process::Command;

const RDMA_BENCH: &str = env!("CARGO_BIN_EXE_rdma-bench");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(RDMA_BENCH)
        .arg("kv-bench")
        .args(args)
        .output()
        .expect("rdma-bench runs");
    crate::common::output_of(out)
}

#[test]
fn bad_sizes_are_refused_in_one_line() {
    for (args, msg) in [
        (
            &["--num-buckets", "3"][..],
            "rdma-bench kv-bench: --num-buckets 3 is not a power of two up to 2^28",
        ),
        (
            &["--log-bytes", "1000000"],
            "rdma-bench kv-bench: --log-bytes 1000000 is not a power of two between 4096 and 2^40",
        ),
        (
            &["--batch", "64"],
            "rdma-bench kv-bench: --batch 64 is not between 1 and 32 (MICA_MAX_BATCH_SIZE)",
        ),
    ] {
        let (code, out, err) = run(args);
        // Values outside their flags' ranges: usage errors (the README's exit codes).
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err, format!("{msg}\n"), "{args:?}");
    }
    // Sizes take the README's suffixes (8Mi parses; the batch rule then refuses the run); a
    // suffix that is none of them is clap's to refuse.
    let (code, _, err) = run(&["--num-keys", "8Mi", "--log-bytes", "1GiB", "--batch", "64"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "rdma-bench kv-bench: --batch 64 is not between 1 and 32 (MICA_MAX_BATCH_SIZE)\n"
        )
    );
    let (code, _, err) = run(&["--num-keys", "8Mx"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_run_bigger_than_the_machine_is_refused_naming_the_flags() {
    // 2^40 bytes of log on ordinary pages, a thousand times over: more than any host has.
    let (code, out, err) = run(&[
        "--log-bytes",
        "1099511627776",
        "--threads",
        "1000",
        "--hugepages",
        "off",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("MiB available"), "{err}");
    for flag in ["--num-keys", "--num-buckets", "--log-bytes", "--threads"] {
        assert!(err.contains(flag), "{flag}: {err}");
    }
}

#[test]
fn small_runs_print_a_line_per_pass_and_a_summary() {
    let small = [
        "--num-keys",
        "8192",
        "--num-buckets",
        "2048",
        "--log-bytes",
        "1048576",
        "--passes",
        "4",
        "--hugepages",
        "off",
    ];
    for (extra, kinds, summary) in [
        (
            &[][..],
            &["insert", "get", "update", "get"][..],
            "summary: insert ",
        ),
        (
            &["--workload", "mix", "--update-percentage", "5"],
            &["insert", "mix", "mix", "mix"],
            "summary: insert ",
        ),
        (
            &["--workload", "herd", "--zipf", "0.99", "--threads", "2"],
            &["herd"; 4],
            "summary (all threads): herd ",
        ),
    ] {
        let args: Vec<&str> = small.iter().chain(extra).copied().collect();
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.starts_with("kv-bench: workload "), "{out}");
        let threads = if extra.contains(&"--threads") { 2 } else { 1 };
        for t in 0..threads {
            for (p, kind) in kinds.iter().enumerate() {
                let line = format!("thread {t}: pass {} {kind}: ", p + 1);
                assert!(out.contains(&line), "{line:?} missing: {out}");
            }
        }
        assert!(
            out.lines().last().is_some_and(|l| l.starts_with(summary)),
            "{out}"
        );
    }
}
