//! Flag combinations that cannot work are refused before any resource is made: one line naming
//! the rule, exit code 1 (clap's usage errors exit 2). Host-only: the checks run before a device
//! is opened, so these pass the same with or without RDMA hardware.

use std::process::Command;

mod exit_codes;
mod perftest_flags;

fn refuse(bin: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin).args(args).output().expect("binary runs");
    assert!(
        out.stdout.is_empty(),
        "refused runs print nothing on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SENDER: &str = env!("CARGO_BIN_EXE_rw-tput-sender");

#[test]
fn write_size_above_the_inline_limit() {
    assert_eq!(
        refuse(SENDER, &["--size", "100"]),
        (1, "rw-tput-sender: size 100 is above the inline limit of 60 bytes for inlined WRITEs (see --max-inline)\n".into())
    );
    // READs are not inlined: the same size is fine as far as the checks go (it then needs a device).
    let ud = env!("CARGO_BIN_EXE_ud-sender");
    assert_eq!(
        refuse(ud, &["--size", "61"]),
        (1, "ud-sender: size 61 is above the inline limit of 60 bytes for inlined SENDs (see --max-inline)\n".into())
    );
}

#[test]
fn postlist_above_unsig_batch() {
    assert_eq!(
        refuse(SENDER, &["--postlist", "32", "--unsig-batch", "16"]),
        (
            1,
            "rw-tput-sender: --postlist (32) must not exceed --unsig-batch (16)\n".into()
        )
    );
}

#[test]
fn queue_depth_below_twice_unsig_batch() {
    assert_eq!(
        refuse(
            env!("CARGO_BIN_EXE_rw-tput-receiver"),
            &["--is-client", "1", "--queue-depth", "100"]
        ),
        (
            1,
            "rw-tput-receiver: --queue-depth (100) must be at least 2 x --unsig-batch (128)\n"
                .into()
        )
    );
}

#[test]
fn window_above_half_the_queue() {
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_rw-allsig"), &["--window", "65"]),
        (
            1,
            "rw-allsig: --window (65) must not exceed --queue-depth / 2 (64)\n".into()
        )
    );
}

#[test]
fn postlist_above_the_maximum() {
    assert_eq!(
        refuse(
            SENDER,
            &[
                "--postlist",
                "65",
                "--unsig-batch",
                "128",
                "--queue-depth",
                "256"
            ]
        ),
        (
            1,
            "rw-tput-sender: --postlist 65 is above the maximum of 64\n".into()
        )
    );
}

#[test]
fn uc_reads_and_bad_numbers() {
    assert_eq!(
        refuse(SENDER, &["--use-uc", "1", "--do-read", "1"]),
        (
            1,
            "rw-tput-sender: UC cannot do READs (--use-uc 1 needs --do-read 0)\n".into()
        )
    );
    assert_eq!(
        refuse(SENDER, &["--duration", "0"]),
        (2, "error: invalid value '0' for '--duration <SECS>': '0' is not a positive number of seconds\n\nFor more information, try '--help'.\n".into())
    );
    let (code, err) = refuse(SENDER, &["--is-client", "2"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value '2' for '--is-client <0|1>': '2' is not 0 or 1"),
        "{err}"
    );
    let (code, err) = refuse(SENDER, &["--hugepages", "maybe"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("'maybe' is not a hugepage policy (auto, require or off)"),
        "{err}"
    );
}

#[test]
fn original_underscore_flags_are_accepted() {
    // gflags spelled them with underscores; scripts written for the C suite keep working.
    assert_eq!(
        refuse(SENDER, &["--num_threads", "1", "--do_read", "0", "--size", "100"]),
        (1, "rw-tput-sender: size 100 is above the inline limit of 60 bytes for inlined WRITEs (see --max-inline)\n".into())
    );
}

#[test]
fn every_benchmark_explains_itself() {
    for bin in [
        SENDER,
        env!("CARGO_BIN_EXE_rw-tput-receiver"),
        env!("CARGO_BIN_EXE_ud-sender"),
        env!("CARGO_BIN_EXE_ud-receiver"),
        env!("CARGO_BIN_EXE_rw-allsig"),
        env!("CARGO_BIN_EXE_rw-postlist-latency"),
        env!("CARGO_BIN_EXE_sender-scalability"),
    ] {
        let out = Command::new(bin).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{bin} --help failed");
        for flag in [
            "--duration",
            "--device",
            "--port-index",
            "--gid-index",
            "--registry",
            "--hugepages",
            "--numa-node",
            "--json",
            "--is-client",
            "--size",
            "--no-provider-env",
        ] {
            assert!(help.contains(flag), "{bin} --help lacks {flag}");
        }
    }
}

#[test]
fn reaping_policy_is_checked() {
    let (code, err) = refuse(SENDER, &["--reap", "sometimes"]);
    assert_eq!(code, 2);
    assert!(err.contains("'sometimes' is not eager or lazy"), "{err}");
    let help = Command::new(SENDER).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--reap <eager|lazy>"), "{help}");
    assert!(help.contains("[default: eager]"), "{help}");
}

// The perftest-compatible tools: refused before any device is opened.

#[test]
fn perf_tools_refuse_what_perftest_refuses_by_exact_message() {
    let cases: [(&[&str], &str); 12] = [
        (
            &["send-bw", "-g", "-q", "2"],
            "rdma-bench send-bw: Only 1 QP supported in multicast",
        ),
        (
            &["send-bw", "-b", "--run_infinitely"],
            "rdma-bench send-bw: run_infinitely mode is not supported in SEND Bidirectional BW test",
        ),
        (
            &["write-bw", "-e"],
            "rdma-bench write-bw: Events feature not available on WRITE verb",
        ),
        (
            &["write-lat", "-b"],
            "rdma-bench write-lat: Bidirectional is only available in BW test",
        ),
        (
            &["send-lat", "--run_infinitely"],
            "rdma-bench send-lat: run_infinitely exists only in BW tests for now.",
        ),
        (
            &["write-bw", "-s", "32", "-l", "16"],
            "rdma-bench write-bw: Number of iterations must be a multiple of post list size",
        ),
        (
            &["write-bw", "-c", "UD"],
            "rdma-bench write-bw: UD connection only possible in SEND verb",
        ),
        (
            &["read-bw", "-c", "UC"],
            "rdma-bench read-bw: UC connection not possible in READ/ATOMIC verbs",
        ),
        (
            &["atomic-bw", "-s", "16"],
            "rdma-bench atomic-bw: Message size cannot be changed for Atomic tests",
        ),
        (
            &["read-lat", "-I", "16"],
            "rdma-bench read-lat: Inline feature not available on READ/Atomic verbs",
        ),
        (
            &["write-lat", "-q", "2"],
            "rdma-bench write-lat: Multiple QPs only available on bw tests",
        ),
        (
            &["write-bw", "-n", "1024", "-l", "32", "-t", "16"],
            "rdma-bench write-bw: post list 32 is deeper than the send queue (-t 16): nothing could be posted (perftest would hang)",
        ),
    ];
    for (args, msg) in cases {
        assert_eq!(
            refuse(RDMA_BENCH, args),
            (1, format!("{msg}\n")),
            "{args:?}"
        );
    }
    // Not a perftest flag at all: clap's usage error.
    assert_eq!(refuse(RDMA_BENCH, &["write-bw", "--bogus"]).0, 2);
}

// The sequencers and echo servers.

const SS_SEQ: &str = env!("CARGO_BIN_EXE_ss-sequencer");
const WS_SEQ: &str = env!("CARGO_BIN_EXE_ws-sequencer");

#[test]
fn apps_postlist_above_unsig_batch() {
    assert_eq!(
        refuse(SS_SEQ, &["--postlist", "32", "--unsig-batch", "16"]),
        (
            1,
            "ss-sequencer: --postlist (32) must not exceed --unsig-batch (16)\n".into()
        )
    );
    assert_eq!(
        refuse(
            WS_SEQ,
            &[
                "--postlist",
                "64",
                "--unsig-batch",
                "32",
                "--num-clients",
                "70"
            ]
        ),
        (
            1,
            "ws-sequencer: --postlist (64) must not exceed --unsig-batch (32)\n".into()
        )
    );
}

#[test]
fn recv_queue_smaller_than_clients_times_postlist() {
    assert_eq!(
        refuse(SS_SEQ, &["--postlist", "32", "--num-server-threads", "10"]),
        (
            1,
            "ss-sequencer: the servers' RECV queue (rq-depth 128) is smaller than clients per server \
thread (7 = ceil(max-num-clients 70 / num-server-threads 10)) × postlist 32\n"
                .into()
        )
    );
}

#[test]
fn window_above_queue_depth() {
    assert_eq!(
        refuse(WS_SEQ, &["--window", "200", "--queue-depth", "128", "--is-client", "1"]),
        (
            1,
            "ws-sequencer: --window (200) exceeds --queue-depth (128): a client's RECV queue holds \
one reply per outstanding request\n"
                .into()
        )
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_ww-echo"), &["--window", "100", "--queue-depth", "64", "--unsig-batch", "32"]),
        (
            1,
            "ww-echo: --window (100) exceeds --queue-depth (64): a round posts the whole window at once\n"
                .into()
        )
    );
}

#[test]
fn role_and_size_rules() {
    assert_eq!(
        refuse(SS_SEQ, &["--num-threads", "2"]),
        (1, "ss-sequencer: the server runs --num-server-threads threads; --num-threads is for clients\n".into())
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_ws-echo"), &["--size", "20"]),
        (1, "ws-echo: size 20 must be a multiple of 8 between 8 and 56 (a request and its tag fill one 64-byte slot)\n".into())
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_ss-echo"), &["--size", "100"]),
        (1, "ss-echo: size 100 is above the inline limit of 60 bytes for inlined SENDs (see --max-inline)\n".into())
    );
    assert_eq!(
        refuse(
            env!("CARGO_BIN_EXE_atomics-sequencer"),
            &["--emulate-drtm", "1", "--use-random", "0"]
        ),
        (
            1,
            "atomics-sequencer: DrTM emulation needs --use-random 1 (one slot per key)\n".into()
        )
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_atomics-sequencer"), &["--is-client", "1", "--num-threads", "4", "--num-clients", "2"]),
        (1, "atomics-sequencer: client 3 (machine-id 0 × num-threads 4 + t) is beyond num-clients 2\n".into())
    );
}

#[test]
fn help_names_the_originals_constants() {
    let out = Command::new(WS_SEQ).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--master",
        "--window",
        "--num-workers",
        "--num-ud-qps",
        "--shm-key",
        "--rr-size",
    ] {
        assert!(
            help.contains(flag),
            "ws-sequencer --help lacks {flag}:\n{help}"
        );
    }
    assert!(
        help.contains("[default: 32]") && help.contains("[default: 70]"),
        "{help}"
    );
}

// HERD.

const HERD: &str = env!("CARGO_BIN_EXE_herd");

#[test]
fn herd_refusals() {
    assert_eq!(
        refuse(HERD, &["--window", "200", "--is-client", "1"]),
        (
            1,
            "herd: --window (200) exceeds --queue-depth (128): a client's RECV queue holds one \
reply per outstanding request\n"
                .into()
        )
    );
    assert_eq!(
        refuse(HERD, &["--value-size", "47"]),
        (
            1,
            "herd: value-size 47 is not between 1 and 46 (a 64-byte op holds a 16-byte key, \
opcode, length and at most 46 value bytes)\n"
                .into()
        )
    );
    assert_eq!(
        refuse(HERD, &["--num-clients", "1000"]),
        (
            1,
            "herd: 12 workers × 1000 clients × window 32 × 128 B slots do not fit the \
16777216-byte request region\n"
                .into()
        )
    );
    assert_eq!(
        refuse(HERD, &["--value-size", "46", "--update-percentage", "5"]),
        (
            1,
            "herd: a PUT of 46 value bytes is a 72-byte request (8-byte check word, 18-byte \
header, value), above the inline limit of 60 bytes: lower --value-size or raise --max-inline\n"
                .into()
        )
    );
    assert_eq!(
        refuse(HERD, &["--postlist", "33", "--unsig-batch", "64"]),
        (1, "herd: --postlist 33 is above the maximum of 32\n".into())
    );
    assert_eq!(
        refuse(HERD, &["--zipf", "1"]),
        (1, "herd: zipf 1 is not in [0, 1)\n".into())
    );
    assert_eq!(
        refuse(HERD, &["--num-buckets", "1000"]),
        (
            1,
            "herd: --num-buckets/--log-bytes: buckets (1000) must be a power of two up to 2^28\n"
                .into()
        )
    );
    assert_eq!(
        refuse(HERD, &["--update-percentage", "101"]),
        (1, "herd: update-percentage 101 is above 100\n".into())
    );
}

// rdma-bench doctor (on any host: with or without an RDMA device, the verdicts and the exit code
// must agree).

const RDMA_BENCH: &str = env!("CARGO_BIN_EXE_rdma-bench");

#[test]
fn doctor_verdicts_and_exit_code_agree() {
    let out = Command::new(RDMA_BENCH)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let objs: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON {l}: {e}")))
        .collect();
    let (summary, findings) = objs.split_last().expect("findings and a summary");
    assert_eq!(summary["summary"], true);
    let count = |v: &str| findings.iter().filter(|f| f["verdict"] == v).count() as u64;
    for f in findings {
        assert!(
            ["ok", "warn", "fail"].contains(&f["verdict"].as_str().unwrap()),
            "{f}"
        );
        assert!(!f["subject"].as_str().unwrap().is_empty(), "{f}");
        if f["verdict"] != "ok" {
            assert!(
                f["fix"].as_str().is_some_and(|s| !s.is_empty()),
                "no fix: {f}"
            );
        }
    }
    assert_eq!(summary["fail"], count("fail"));
    assert_eq!(summary["warn"], count("warn"));
    for topic in ["memlock", "hugepages", "cpu governor"] {
        assert!(
            findings.iter().any(|f| f["subject"] == topic),
            "no {topic}: {stdout}"
        );
    }
    assert_eq!(
        out.status.code(),
        Some(if count("fail") > 0 { 1 } else { 0 })
    );
}

#[test]
fn doctor_names_a_missing_device() {
    let out = Command::new(RDMA_BENCH)
        .args(["doctor", "--device", "no-such-dev0"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // "no RDMA device called …" where verbs lists devices, the listing's error where it cannot.
    assert!(
        stdout.lines().any(|l| l.starts_with("[fail] devices: ")),
        "{stdout}"
    );
    assert!(stdout.contains("       fix: "), "{stdout}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(" finding(s) will make a benchmark fail"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn write_probes_refuse_bad_flags_and_explain_themselves() {
    let flush = env!("CARGO_BIN_EXE_write-flush");
    let incomplete = env!("CARGO_BIN_EXE_write-incomplete");
    let reordering = env!("CARGO_BIN_EXE_write-reordering");
    for n in ["0", "65"] {
        assert_eq!(
            refuse(flush, &["--num_writes", n]),
            (
                1,
                format!("write-flush: num-writes must be between 1 and 64 (2 WRs per pair in a 128-deep send queue), not {n}\n")
            )
        );
    }
    assert_eq!(
        refuse(incomplete, &["--duration", "0"]),
        (2, "error: invalid value '0' for '--duration <SECS>': '0' is not a positive number of seconds\n\nFor more information, try '--help'.\n".into())
    );
    assert_eq!(refuse(reordering, &["--is_client", "2"]).0, 2);
    assert_eq!(refuse(incomplete, &["--do-read", "2"]).0, 2);
    assert_eq!(refuse(flush, &["--check", "yes"]).0, 2);
    for (bin, flags) in [
        (
            reordering,
            &["--is-client", "--max-print", "--duration"][..],
        ),
        (
            incomplete,
            &[
                "--do-read",
                "--client-port-index",
                "--server-port-index",
                "default 10 here",
                "§9.7.5.1.6",
            ][..],
        ),
        (
            flush,
            &["--is-client", "--num-writes", "--check", "--json"][..],
        ),
    ] {
        let out = Command::new(bin).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{bin} --help failed");
        for flag in flags {
            assert!(help.contains(flag), "{bin} --help lacks {flag}:\n{help}");
        }
    }
}

#[test]
fn stability_mode_flags() {
    let (code, err) = refuse(SENDER, &["--stats-interval", "0", "--stats-file", "x.csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'0' is not a positive number of seconds"),
        "{err}"
    );
    let (code, err) = refuse(SENDER, &["--stats-interval", "5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--stats-file"), "{err}");
    assert_eq!(
        refuse(SENDER, &["--stats-file", "/nonexistent-dir/rates.csv"]),
        (2, "rw-tput-sender: --stats-file /nonexistent-dir/rates.csv: directory /nonexistent-dir does not exist\n".into())
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_write-flush"), &["--stats-file", "rates.csv"]),
        (1, "write-flush: write-flush measures latency windows, not per-thread rates: --stats-file/--stats-interval (stability mode) is for the rate benchmarks\n".into())
    );
}

/// A build against headers without the ibv_wr_* API (bench_scripts/test.sh builds one) refuses
/// `--post-api wr` before touching a device.
#[cfg(not(has_wr_api))]
#[test]
fn post_api_wr_without_the_wr_api() {
    assert_eq!(
        refuse(SENDER, &["--post-api", "wr"]),
        (
            1,
            "rw-tput-sender: this rdma-bench was built against rdma-core headers without the \
             ibv_wr_* post API (rdma-core < v24 / MLNX_OFED 4.x): --post-api wr is not available; \
             use --post-api classic, or rebuild against rdma-core >= v24\n"
                .into()
        )
    );
}

/// A build without librdmacm (bench_scripts/test.sh builds one) refuses `-R` in one line before
/// touching a device, naming what to install.
#[cfg(not(has_rdmacm))]
#[test]
fn rdma_cm_without_librdmacm() {
    let tool = env!("CARGO_BIN_EXE_rdma-bench");
    for args in [
        &["write-bw", "-R"][..],
        &["send-lat", "-R", "127.0.0.1"],
        &["read-bw", "-z", "127.0.0.1"],
    ] {
        let (code, err) = refuse(tool, args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.ends_with(
                ": -R and -z need librdmacm, and this rdma-bench was built without it (install \
                 librdmacm-dev or rdma-core-devel and rebuild)\n"
            ),
            "{args:?}: {err}"
        );
    }
}

/// The descriptors are the one list of benchmarks: every one has a binary that explains itself
/// and describes itself exactly as `rdma-bench list` does, the list's JSON names them all, and
/// the suite's rows all name a benchmark of the list or a perftest tool.
#[test]
fn every_descriptor_has_its_binary_and_the_list_agrees() {
    let bins = std::path::Path::new(SENDER).parent().unwrap();
    for b in rdma_bench::bench::ALL {
        let bin = bins.join(b.name);
        let help = Command::new(&bin).arg("--help").output().unwrap();
        assert!(help.status.success(), "{} --help failed", b.name);
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("--duration"),
            "{} --help lacks the common flags",
            b.name
        );
        let own = Command::new(&bin).arg("--describe").output().unwrap();
        let listed = Command::new(RDMA_BENCH)
            .args(["list", "--describe", b.name])
            .output()
            .unwrap();
        assert!(
            own.status.success() && listed.status.success(),
            "{}",
            b.name
        );
        assert_eq!(own.stdout, listed.stdout, "{}", b.name);
        assert_eq!(String::from_utf8_lossy(&own.stdout), b.describe());
    }
    let json = Command::new(RDMA_BENCH)
        .args(["list", "--json"])
        .output()
        .unwrap();
    let all: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    for b in rdma_bench::bench::ALL {
        assert!(names.contains(&b.name), "{} not in list --json", b.name);
    }
    let suite = Command::new(RDMA_BENCH)
        .args(["list", "--suite"])
        .output()
        .unwrap();
    let suite = String::from_utf8_lossy(&suite.stdout);
    assert!(suite.lines().count() >= 20, "{suite}");
    for row in suite.lines() {
        let name = row.split_whitespace().next().unwrap();
        assert!(
            names.contains(&name),
            "suite row {row:?} names no benchmark"
        );
    }
    assert_eq!(
        refuse(RDMA_BENCH, &["list", "--describe", "nope"]),
        (2, "rdma-bench list: --describe nope: no such benchmark (`rdma-bench list` names them; perftest's tools are subcommands: rdma-bench nope --help)\n".into())
    );
}

#[test]
fn qos_flags_are_checked_before_any_device() {
    // The paper benchmarks' flags: clap's range checks (exit 2).
    for (args, says) in [
        (&["--sl", "16"][..], "16 is not in 0..=15"),
        (&["--traffic-class", "256"][..], "256 is not in 0..=255"),
        (
            &["--flow-label", "1048576"][..],
            "1048576 is not in 0..=1048575",
        ),
    ] {
        let (code, err) = refuse(SENDER, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(args[0]) && err.contains(says),
            "{args:?}: {err}"
        );
    }
    // perftest's: a value outside its flag's range exits 2, a combination 1; one line each.
    let cases: [(&[&str], &str); 7] = [
        (&["write-bw", "-S", "16"], "-S/--sl is 16: it takes 0 to 15"),
        (
            &["write-bw", "--tclass", "256"],
            "--tclass is 256: it takes 0 to 255",
        ),
        (
            &["write-bw", "-T", "32"],
            "-T/--tos is the type of service of RDMA CM connections: it needs -R/--rdma_cm \
             (without -R, --tclass sets the GRH's traffic class)",
        ),
        (
            &["write-bw", "-R", "--tclass", "32"],
            "--tclass applies to QPs connected over the TCP exchange; with -R/--rdma_cm RDMA CM \
             resolves the path: set its traffic class with -T/--tos",
        ),
        (
            &["send-lat", "-L", "9"],
            "-L/--hop_limit 9: perftest sets the hop limit of raw Ethernet QPs only, and \
             rdma-bench has none; RC, UC and UD QPs send hop limit 255, as perftest's",
        ),
        (
            &["read-bw", "--retry_count", "3"],
            "--retry_count is RDMA CM's retry count: it needs -R/--rdma_cm (without -R, QPs \
             retry 7 times, as perftest's)",
        ),
        (
            &["write-lat", "--flow_label", "1,2,1048576"],
            "--flow_label \"1,2,1048576\": 1048576 does not fit the GRH's 20 bits (0 to 1048575)",
        ),
    ];
    for (args, msg) in cases {
        let tool = args[0];
        let out_of_range = msg.contains("it takes") || msg.contains("does not fit");
        assert_eq!(
            refuse(RDMA_BENCH, args),
            (
                if out_of_range { 2 } else { 1 },
                format!("rdma-bench {tool}: {msg}\n")
            ),
            "{args:?}"
        );
    }
}

#[test]
fn a_numa_node_the_host_lacks_is_refused() {
    let (code, err) = refuse(SENDER, &["--numa-node", "7"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(
            "rw-tput-sender: --numa-node 7: this host has no NUMA node 7 (its nodes: 0"
        ),
        "{err}"
    );
}

#[test]
fn too_many_threads_are_refused_before_any_is_spawned() {
    let (code, err) = refuse(SENDER, &["--num-threads", "100000"]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "rw-tput-sender: --num-threads 100000 is above 1024, the threads one process runs \
             (each drives its own QP and buffer): run more processes (--machine-id) instead\n"
        )
    );
}

#[test]
fn sizes_and_counts_take_the_suffixes_the_readme_writes() {
    // Parsed with the suffix, then refused by the rule that names the value it became.
    assert_eq!(
        refuse(SENDER, &["--size", "1Ki"]),
        (1, "rw-tput-sender: size 1024 is above the inline limit of 60 bytes for inlined WRITEs (see --max-inline)\n".into())
    );
    let (code, err) = refuse(SENDER, &["--num-threads", "2K"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--num-threads 2000 is above 1024"), "{err}");
    // The README's own notation for HERD's defaults is accepted (the postlist rule then refuses).
    let herd = env!("CARGO_BIN_EXE_herd");
    let (code, err) = refuse(
        herd,
        &[
            "--num-keys",
            "8Mi",
            "--num-buckets",
            "2Mi",
            "--log-bytes",
            "1GiB",
            "--rr-size",
            "16MiB",
            "--is-client",
            "1",
            "--postlist",
            "64",
        ],
    );
    assert_eq!(
        (code, err.as_str()),
        (1, "herd: --postlist 64 is above the maximum of 32\n")
    );
    // A bad suffix is a usage error naming the flag as typed.
    let (code, err) = refuse(SENDER, &["--buf-size", "8x"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value '8x' for '--buf-size <BUF_SIZE>'") && err.contains("Ki"),
        "{err}"
    );
    let (code, err) = refuse(SENDER, &["--postlist", "8Gi"]);
    assert_eq!(code, 2);
    assert!(err.contains("out of range"), "{err}");
}

#[test]
fn every_binary_and_subcommand_says_its_version() {
    let bench = env!("CARGO_BIN_EXE_rdma-bench");
    let version = env!("CARGO_PKG_VERSION");
    let run = |bin: &str, args: &[&str]| {
        let o = Command::new(bin).args(args).output().expect("runs");
        assert!(o.status.success(), "{bin} {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The perftest tools as perftest: "Version: <protocol>", with -V and --version.
    for tool in ["write-bw", "read-lat", "send-bw", "atomic-lat"] {
        for flag in ["-V", "--version"] {
            assert_eq!(
                run(bench, &[tool, flag]),
                format!("Version: 6.06 (rdma-bench {version})\n")
            );
        }
    }
    for sub in [
        "doctor", "sweep", "compare", "plot", "fleet", "history", "list", "kv-bench",
    ] {
        assert_eq!(
            run(bench, &[sub, "--version"]),
            format!("rdma-bench-{sub} {version}\n")
        );
    }
    assert_eq!(run(bench, &["-V"]), format!("rdma-bench {version}\n"));
    assert_eq!(
        run(SENDER, &["--version"]),
        format!("rw-tput-sender {version}\n")
    );
    let herd = env!("CARGO_BIN_EXE_herd");
    assert_eq!(run(herd, &["-V"]), format!("herd {version}\n"));
}

#[test]
fn a_process_takes_one_role() {
    for (bin, name) in [
        (env!("CARGO_BIN_EXE_herd"), "herd"),
        (env!("CARGO_BIN_EXE_ws-sequencer"), "ws-sequencer"),
        (env!("CARGO_BIN_EXE_ws-echo"), "ws-echo"),
    ] {
        assert_eq!(
            refuse(bin, &["--master", "1", "--is-client", "1"]),
            (
                1,
                format!(
                    "{name}: --master 1 and --is-client 1 are two roles: run {name}'s master, its \
                     workers (--is-client 0) and its clients (--is-client 1) as separate processes\n"
                )
            )
        );
    }
}

#[test]
fn a_negative_number_is_a_value_refused_by_its_rule() {
    // Both spellings, one answer (clap took `-1` for a flag and suggested `-- -1`).
    for args in [&["--duration", "-1"][..], &["--duration=-1"]] {
        assert_eq!(
            refuse(SENDER, args),
            (2, "error: invalid value '-1' for '--duration <SECS>': '-1' is not a positive number of seconds\n\nFor more information, try '--help'.\n".into())
        );
    }
    let bench = env!("CARGO_BIN_EXE_rdma-bench");
    for args in [
        &["write-bw", "-D", "-1"][..],
        &["write-bw", "--duration=-1"],
    ] {
        let (code, err) = refuse(bench, args);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("\"-1\" is not a non-negative integer"),
            "{err}"
        );
        assert!(!err.contains("-- -1"), "{err}");
    }
}

#[test]
fn herd_stores_the_machine_cannot_hold_are_refused_before_anything_is_made() {
    // 12 workers × a 64 GiB log: more than any test machine has.
    let (code, err) = refuse(HERD, &["--log-bytes", "64Gi"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with("herd: this run needs ")
            && err.contains("MiB available: lower --num-workers, --num-buckets or --log-bytes")
            && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn help_describes_what_each_benchmark_does_with_a_flag() {
    let help = |bin: &str| {
        let o = Command::new(bin).arg("--help").output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The probes refuse stability mode: their help does not offer it.
    for probe in [
        env!("CARGO_BIN_EXE_write-flush"),
        env!("CARGO_BIN_EXE_write-incomplete"),
        env!("CARGO_BIN_EXE_write-reordering"),
    ] {
        let h = help(probe);
        assert!(!h.contains("--stats-"), "{probe}:\n{h}");
        assert!(h.contains("--duration"), "{probe}:\n{h}");
    }
    assert!(help(SENDER).contains("--stats-interval"));
    // --verify says what it checks in each application, not the microbenchmarks' words.
    for (bin, says) in [
        (
            env!("CARGO_BIN_EXE_ss-sequencer"),
            "no value was handed out twice or lost",
        ),
        (
            env!("CARGO_BIN_EXE_ws-sequencer"),
            "no value was handed out twice or lost",
        ),
        (
            env!("CARGO_BIN_EXE_ws-echo"),
            "outstanding requests back, byte for byte",
        ),
        (
            env!("CARGO_BIN_EXE_ww-echo"),
            "outstanding requests back, byte for byte",
        ),
        (
            env!("CARGO_BIN_EXE_atomics-sequencer"),
            "FETCH_AND_ADDs the clients completed",
        ),
        (HERD, "against the last version they PUT"),
    ] {
        let h = help(bin);
        assert!(
            h.contains(says) && !h.contains("SEND immediates"),
            "{bin}:\n{h}"
        );
    }
    assert!(help(SENDER).contains("WRITE/READ contents"));
}

#[test]
fn each_perftest_tool_lists_only_the_flags_it_takes() {
    let bench = env!("CARGO_BIN_EXE_rdma-bench");
    let help = |tool: &str| {
        let o = Command::new(bench).args([tool, "--help"]).output().unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let has = |h: &str, flag: &str| h.lines().any(|l| l.trim_start().starts_with(flag));
    let write_bw = help("write-bw");
    for absent in [
        "-A, --atomic_type",
        "-e, --events",
        "-X, --vector",
        "-o, --outs",
        "-U, ",
    ] {
        assert!(
            !has(&write_bw, absent),
            "write-bw lists {absent}:\n{write_bw}"
        );
    }
    for present in [
        "-b, --bidirectional",
        "-l, --post_list",
        "-I, --inline_size",
    ] {
        assert!(has(&write_bw, present), "write-bw lacks {present}");
    }
    let read_lat = help("read-lat");
    for absent in ["-b, ", "-l, ", "-q, ", "-I, ", "--run_infinitely"] {
        assert!(!has(&read_lat, absent), "read-lat lists {absent}");
    }
    assert!(has(&read_lat, "-o, --outs") && has(&read_lat, "-e, --events"));
    let atomic_bw = help("atomic-bw");
    assert!(!has(&atomic_bw, "-s, --size") && has(&atomic_bw, "-A, --atomic_type"));
    assert!(has(&help("send-bw"), "-r, --rx-depth") && !has(&write_bw, "-r, "));
    // A flag a tool's help leaves out is still refused as perftest refuses it.
    assert_eq!(
        refuse(bench, &["write-bw", "-A", "CMP_AND_SWAP"]),
        (
            1,
            "rdma-bench write-bw: -A/--atomic_type changes the atomic of the atomic tests only\n"
                .into()
        )
    );
}

#[test]
fn an_rdma_cm_client_without_its_device_says_so() {
    // Not "is the rdma_ucm module loaded?": the device is what is missing (here: no such
    // device, or no RDMA stack at all on a host without one).
    let (code, err) = refuse(
        RDMA_BENCH,
        &["write-bw", "-R", "-d", "no-such-dev0", "127.0.0.1"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("rdma_ucm"), "{err}");
    assert!(
        err.contains("no RDMA device named 'no-such-dev0'")
            || err.contains("is the RDMA stack loaded?")
            || err.contains("there is no RDMA device on this host"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn man_pages_and_completions_come_from_the_flags() {
    let dir = std::env::temp_dir().join(format!("rdma-bench-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(RDMA_BENCH)
        .args(["man", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("wrote {} man pages into {}\n", pages.len(), dir.display())
    );
    for want in [
        "rdma-bench.1",
        "rdma-bench-write-bw.1",
        "rdma-bench-history-check.1",
        "herd.1",
        "rw-tput-sender.1",
    ] {
        assert!(pages.iter().any(|p| p == want), "{want} not in {pages:?}");
    }
    // The page says what --help says: write-bw's lists -b and not the atomic type it refuses.
    let write_bw = std::fs::read_to_string(dir.join("rdma-bench-write-bw.1")).unwrap();
    assert!(write_bw.contains("bidirectional") && !write_bw.contains("atomic_type"));
    let herd = std::fs::read_to_string(dir.join("herd.1")).unwrap();
    assert!(
        herd.contains("num\\-workers") || herd.contains("num-workers"),
        "{herd}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    // Completions: rdma-bench's script on stdout, every binary's with --out.
    let out = Command::new(RDMA_BENCH)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && script.contains("write-bw") && script.contains("complete -F"));
    let out = Command::new(RDMA_BENCH)
        .args(["completions", "zsh", "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(dir.join("_rdma-bench").exists() && dir.join("_rw-tput-sender").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    let (code, err) = refuse(RDMA_BENCH, &["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}
