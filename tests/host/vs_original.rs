//! bench_scripts/vs-original.sh's host-side contract, without an original checkout (CI has none):
//! a SRC_DIR of the wrong layout is refused in one line with exit 2 before anything is built,
//! `--help` explains, and bench_scripts/original-gid.patch stays the small, documented patch it
//! claims to be. The end-to-end run (build, testbed, table) needs the user's checkout and is run
//! by hand (see docs/workflow.md, "Against the original C suite").

use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/vs-original.sh")
}

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(script())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("vs-original.sh runs");
    crate::common::output_of(out)
}

/// An empty directory under cargo's per-target temp dir, whatever an earlier run left there.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the previous run's dir");
    }
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn a_directory_that_is_not_the_original_is_refused_in_one_line() {
    let dir = fresh_dir("vs-original-not-a-checkout");
    let d = dir.to_str().expect("utf-8 path");
    let (code, out, err) = run(&[d], &[]);
    assert_eq!(code, 2, "stderr: {err}");
    assert!(out.is_empty(), "nothing on stdout: {out}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with(
            "vs-original.sh: SRC_DIR must be a checkout of https://github.com/efficient/rdma_bench"
        ),
        "{err}"
    );
    assert!(err.trim_end().ends_with("has no CMakeLists.txt"), "{err}");

    // A file the layout needs beyond CMakeLists.txt is named too.
    std::fs::write(dir.join("CMakeLists.txt"), "project(x)\n").expect("write");
    let (code, _, err) = run(&[d], &[]);
    assert_eq!(code, 2);
    assert!(
        err.trim_end().ends_with("has no libhrd_cpp/hrd_conn.cc"),
        "{err}"
    );
}

#[test]
fn usage_and_bad_settings() {
    let (code, out, _) = run(&["--help"], &[]);
    assert_eq!(code, 0);
    assert!(out.starts_with("vs-original.sh"), "{out}");
    for word in [
        "SRC_DIR",
        "REPS",
        "DURATION",
        "PAIRS",
        "ud-receiver",
        "atomics-sequencer",
        "valgrind",
        "memcached",
        "original-gid.patch",
    ] {
        assert!(out.contains(word), "--help mentions {word}: {out}");
    }
    assert!(
        !out.contains("set -euo"),
        "--help is the header comment only: {out}"
    );

    let (code, _, err) = run(&[], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bench_scripts/vs-original.sh SRC_DIR"),
        "{err}"
    );

    // Settings are checked before SRC_DIR is copied or anything is built.
    let dir = fresh_dir("vs-original-layout");
    for f in ["libhrd_cpp", "rw-tput-sender"] {
        std::fs::create_dir_all(dir.join(f)).expect("dirs");
    }
    for f in [
        "CMakeLists.txt",
        "libhrd_cpp/hrd_conn.cc",
        "libhrd_cpp/hrd_util.cc",
        "rw-tput-sender/main.cc",
    ] {
        std::fs::write(dir.join(f), "").expect("write");
    }
    let d = dir.to_str().expect("utf-8 path");
    let (code, _, err) = run(&[d], &[("REPS", "two")]);
    assert_eq!(
        (code, err.as_str()),
        (2, "vs-original.sh: REPS must be a whole number >= 1\n")
    );
    let (code, _, err) = run(&[d], &[("PAIRS", "ud-sender ud-snder")]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(
            "vs-original.sh: PAIRS: unknown pair 'ud-snder' (the pairs: rw-tput-sender-write-pl1 "
        ),
        "{err}"
    );
    let (code, _, err) = run(&[d], &[("INSTR_N1", "50000"), ("INSTR_N2", "10000")]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "vs-original.sh: INSTR_N1 and INSTR_N2 must be whole numbers, 1 <= INSTR_N1 < INSTR_N2\n"
        )
    );
}

#[test]
fn the_patch_is_documented_and_touches_only_what_it_says() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/original-gid.patch");
    let text = std::fs::read_to_string(p).expect("the patch is there");
    let first_diff = text
        .find("\ndiff ")
        .expect("a unified diff follows the header");
    let header = &text[..first_diff];
    for topic in [
        "GID",
        "ibv_exp_",
        "gcc 12",
        "HRD_GID_INDEX",
        "HRD_REPORT_OPS",
        "HRD_REGISTRY_PORT",
        "hrd_report_mark",
        "ibv_create_ah_from_wc",
    ] {
        assert!(header.contains(topic), "the header explains {topic}");
    }
    let mut files: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("+++ "))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .map(|l| l.split_once('/').map_or(l, |(_, rest)| rest))
        .collect();
    files.sort_unstable();
    assert_eq!(
        files,
        [
            "CMakeLists.txt",
            "atomics-sequencer/main.cc",
            "libhrd_cpp/hrd.h",
            "libhrd_cpp/hrd_conn.cc",
            "libhrd_cpp/hrd_util.cc",
            "rw-tput-receiver/main.cc",
            "rw-tput-sender/main.cc",
            "ss-echo/main.cc",
            "ud-receiver/main.cc",
            "ud-sender/main.cc",
        ]
    );
    // The measured loop of rw-tput-sender changes only in where the report interval comes from,
    // and in the mark its report makes for callgrind.
    let sender = &text[text
        .find("+++ orig-edit/rw-tput-sender/main.cc")
        .expect("sender hunk")..];
    let sender = &sender[..sender[1..].find("\ndiff ").map_or(sender.len(), |i| i + 1)];
    let changed: Vec<&str> = sender
        .lines()
        .skip(1)
        .filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++"))
        .collect();
    assert_eq!(
        changed,
        [
            "+  const size_t report_ops = hrd_report_ops(MB(8));",
            "-    if (rolling_iter >= MB(8)) {",
            "+    if (rolling_iter >= report_ops) {",
            "+      hrd_report_mark();",
        ]
    );
}

/// Runs `bash -c SCRIPT` with bench_scripts/lib/vs-pairs.sh sourced; its stdout.
fn with_pairs(script: &str) -> String {
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/lib/vs-pairs.sh");
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; source '{}'; {script}",
            lib.display()
        ))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_pair_names_both_commands_and_a_measured_side() {
    let out = with_pairs(
        r#"for p in $ALL_PAIRS; do pair "$p"; echo "$p|$ours_bin|$ours_side|$orig_bin|$orig_side|$orig_server|$orig_client"; done
           for b in $ORIGINAL_BINS; do echo "bin $b"; done
           pair rw-tput-sender-send-pl1 || echo "refused send""#,
    );
    let bins: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("bin ")).collect();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.contains('|'))
        .map(|l| l.split('|').collect())
        .collect();
    assert_eq!(rows.len(), 10, "{out}");
    for r in &rows {
        assert!(["server", "client"].contains(&r[2]), "{r:?}");
        assert!(["server", "client"].contains(&r[4]), "{r:?}");
        assert!(bins.contains(&r[3]), "{} is built: {r:?}", r[3]);
        assert!(
            r[5].contains("--is_client 0") && r[6].contains("--is_client 1"),
            "{r:?}"
        );
    }
    let sender_read_16 = rows
        .iter()
        .find(|r| r[0] == "rw-tput-sender-read-pl16")
        .expect("row");
    assert!(
        sender_read_16[5].ends_with("--size 32 --postlist 16 --do_read 1"),
        "{sender_read_16:?}"
    );
    assert!(out.contains("refused send"), "{out}");
}

#[test]
fn report_lines_of_both_suites_become_mops() {
    // The original's reports are timed by their arrival (stamp), ours read as printed.
    let out = with_pairs(
        r#"f=$(mktemp)
           printf '%s\n' 'main: Server 0 connected' 'main: Server 0: 0.04 M/s' 'main: Server 1: 0.04 M/s' 'main: Server 0: 0.04 M/s' | stamp >"$f"
           awk '{ if ($1 !~ /^[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]$/) exit 1 }' "$f" && echo stamped
           printf '%s\n' '100.000000 main: Server 0 connected' '100.500000 main: Server 0: 0.01 M/s' '100.900000 main: Server 1: 9 IOPS' \
             '101.000000 main: Server 0: 0.02 M/s' '101.250000 main: Total tput = 0.03' '101.250000 main: Server 0: 0.02 M/s' >"$f"
           orig_rates "$f" Server 20000
           printf '%s\n' '[client] main: Client 0: 5.00 IOPS' '[server] main: Server 0: 1500000.00 IOPS' >"$f"; ours_rates "$f" Server
           rm "$f""#,
    );
    assert_eq!(out, "stamped\n0.04\n0.08\n1.5\n");
}
