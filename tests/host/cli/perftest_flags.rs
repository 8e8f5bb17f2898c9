//! perftest parity by flag: every long flag that perftest 4.5's eight tools list in their help
//! (tests/data/perftest/flags-4.5.txt, vendor-only ones left out), given to the matching
//! rdma-bench tool with a value that is valid there, must either get through every check to the
//! device (accepted) or be refused by name as not implemented, in one line; never taken for
//! something else or met with "unexpected argument". The accepted share is the coverage table
//! of the perftest-compatible tools, printed with --nocapture.

use std::collections::BTreeMap;
use std::process::Command;

const TOOL: &str = env!("CARGO_BIN_EXE_rdma-bench");
/// An address no one answers at (TEST-NET-1), for the flags that need a client.
const SERVER: &str = "192.0.2.1";

/// The arguments that use `flag` validly in `tool` (with what it needs beside it).
fn sample(tool: &str, flag: &str) -> Vec<String> {
    let bw = tool.ends_with("-bw");
    let v: &[&str] = match flag {
        "--all" => &["-a"],
        "--atomic_type" => &["-A", "CMP_AND_SWAP"],
        "--bidirectional" => &["-b"],
        "--burst_size" => &["--rate_limit", "10", "--burst_size", "8"],
        "--comm_rdma_cm" => &["-z", SERVER],
        "--connection" => &["-c", "RC"],
        "--CPU-freq" => &["-F"],
        "--cpu_util" => &["--cpu_util"],
        "--cq-mod" => &["-Q", "10"],
        "--dlid" => &["--dlid", "5"],
        "--duration" => &["-D", "4"],
        "--events" => &["-e"],
        "--force-link" => &["--force-link", "Ethernet"],
        "--gid-index" => &["-x", "1"],
        "--hop_limit" => &["-L", "64"],
        "--ib-dev" => &[],
        "--ib-port" => &["-i", "1"],
        "--inline_recv" => &["--inline_recv", "0"],
        "--inline_size" => &["-I", "0"],
        "--iters" => &["-n", "100"],
        "--latency_gap" => &["--latency_gap", "10"],
        "--limit_bw" => &["-w", "1"],
        "--limit_msgrate" => &["-y", "1"],
        "--margin" => &["-D", "8", "-f", "2"],
        "--MGID" => &["-g", "-M", "255:1:0:0:0:0:0:0:0:0:0:0:0:0:0:1"],
        "--mcg" => &["-g"],
        "--mmap" => &["--mmap", "/nonexistent/buffer"],
        "--mmap-offset" => &["--mmap", "/nonexistent/buffer", "--mmap-offset", "0"],
        "--mtu" => &["-m", "1024"],
        "--noPeak" => &["-N"],
        "--out_json_file" => &["--out_json", "--out_json_file", "/tmp/perftest-flags.json"],
        "--output" if bw => &["--output", "bandwidth"],
        "--output" => &["--output", "latency"],
        "--outs" => &["-o", "4"],
        "--pkey_index" => &["--pkey_index", "0"],
        "--port" => &["-p", "18515"],
        "--post_list" => &["-l", "1"],
        "--qp" => &["-q", "2"],
        "--qp-timeout" => &["-u", "14"],
        "--rate_limit" => &["--rate_limit", "10"],
        "--rate_limit_type" => &["--rate_limit_type", "HW", "--rate_limit", "10"],
        "--rate_units" => &["--rate_limit", "10", "--rate_units", "M"],
        "--rdma_cm" => &["-R", SERVER],
        "--recv_post_list" => &["--recv_post_list", "1"],
        "--report-both" => &["-b", "--report-both"],
        "--report-counters" => &["-W", "counters/port_xmit_data"],
        "--report-cycles" => &["-C"],
        "--report-histogram" => &["-H"],
        "--report-per-port" => &["-O", "-D", "4", "--report-per-port"],
        "--report-unsorted" => &["-U"],
        "--retry_count" => &["-R", "--retry_count", "7", SERVER],
        "--rx-depth" => &["-r", "512"],
        "--size" => &["-s", "64"],
        "--sl" => &["-S", "0"],
        "--source_ip" => &["--source_ip", "127.0.0.1", SERVER],
        "--tclass" => &["--tclass", "0"],
        "--tos" => &["-R", "-T", "0", SERVER],
        "--tx-depth" => &["-t", "64"],
        "--typical_pkt_size" => &["--rate_limit", "10", "--typical_pkt_size", "1024"],
        "--vector" => &["-e", "-X", "0"],
        "--wait_destroy" => &["--wait_destroy", "1"],
        // The rest take no value.
        other => return vec![other.to_string()],
    };
    v.iter().map(|s| s.to_string()).collect()
}

enum Verdict {
    Accepted,
    /// Refused with the message perftest 4.5 itself refuses this use with.
    AsPerftest,
    Refused(String),
}

/// Uses of a listed flag that perftest 4.5 refuses itself, with its message.
const PERFTEST_REFUSES: &[(&str, &str, &str)] = &[
    ("--odp", "atomic-bw", "ODP does not support ATOMICS for now"),
    (
        "--odp",
        "atomic-lat",
        "ODP does not support ATOMICS for now",
    ),
    // Packet pacing's, and perftest takes packet pacing on raw Ethernet only.
    ("--typical_pkt_size", "write-bw", PP_ONLY),
    ("--typical_pkt_size", "read-bw", PP_ONLY),
    ("--typical_pkt_size", "send-bw", PP_ONLY),
    ("--typical_pkt_size", "atomic-bw", PP_ONLY),
];
const PP_ONLY: &str = "Typical packet size only supports PP rate limiter";

fn judge(tool: &str, flag: &str) -> Verdict {
    let args = sample(tool, flag);
    let out = Command::new(TOOL)
        .arg(tool)
        .args(["-d", "nodev0"])
        .args(&args)
        .output()
        .expect("rdma-bench runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    if matches!(flag, "--help" | "--version") {
        assert_eq!(code, Some(0), "{tool} {flag}: {err}");
        return Verdict::Accepted;
    }
    // Every check passed: what stopped the run is the device (none named nodev0, or no RDMA
    // stack on this host).
    let at_device = err.contains("no RDMA device named 'nodev0'")
        || err.contains("ibv_get_device_list failed")
        || err.contains("there is no RDMA device on this host");
    if at_device {
        return Verdict::Accepted;
    }
    assert_eq!(
        (code, err.lines().count()),
        (Some(1), 1),
        "{tool} {args:?}: a perftest flag is accepted or refused by name in one line, not:\n{err}"
    );
    if PERFTEST_REFUSES
        .iter()
        .any(|(f, t, why)| *f == flag && *t == tool && err.contains(why))
    {
        return Verdict::AsPerftest;
    }
    assert!(
        err.contains("is not implemented in rdma-bench"),
        "{tool} {args:?}: the sample use of {flag} is valid in perftest, yet refused:\n{err}"
    );
    Verdict::Refused(err.trim().to_string())
}

#[test]
fn every_perftest_flag_is_accepted_or_refused_by_name() {
    let list = include_str!("../../data/perftest/flags-4.5.txt");
    let pairs: Vec<(&str, &str)> = list
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .flat_map(|l| {
            let mut w = l.split_whitespace();
            let tool = w.next().unwrap();
            w.map(move |f| (tool, f))
        })
        .collect();
    // One process per pair, a few at a time (each mostly waits on its own start-up).
    let verdicts: Vec<Verdict> = std::thread::scope(|scope| {
        let chunks: Vec<_> = pairs
            .chunks(pairs.len().div_ceil(4))
            .map(|c| scope.spawn(move || c.iter().map(|(t, f)| judge(t, f)).collect::<Vec<_>>()))
            .collect();
        chunks.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let mut accepted = 0;
    let mut total = 0;
    let mut as_perftest = 0;
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut per_tool: Vec<(&str, usize, usize)> = Vec::new();
    for ((tool, flag), verdict) in pairs.iter().zip(verdicts) {
        if per_tool.last().is_none_or(|(t, _, _)| t != tool) {
            per_tool.push((tool, 0, 0));
        }
        let row = per_tool.last_mut().unwrap();
        row.1 += 1;
        total += 1;
        match verdict {
            Verdict::Accepted => row.2 += 1,
            Verdict::AsPerftest => {
                row.2 += 1;
                as_perftest += 1;
            }
            Verdict::Refused(why) => refused
                .entry(flag.to_string())
                .or_default()
                .push(format!("{tool}: {why}")),
        }
    }
    println!("| tool | perftest 4.5 flags | accepted | refused |");
    println!("|---|---|---|---|");
    for (tool, n, yes) in &per_tool {
        println!("| {tool} | {n} | {yes} | {} |", n - yes);
        accepted += yes;
    }
    println!(
        "| all | {total} | {accepted} ({:.1} %) | {} |",
        accepted as f64 * 100.0 / total as f64,
        total - accepted
    );
    println!(
        "(accepted counts {as_perftest} uses that perftest 4.5 refuses too, with the same message)"
    );
    println!();
    for (flag, tools) in &refused {
        println!("refused: {flag}\n    {}", tools.join("\n    "));
    }
    assert_eq!(total, 452, "perftest 4.5's lists");
    // Raise this as flags are implemented: fewer accepted pairs is a regression.
    assert!(
        accepted >= ACCEPTED_AT_LEAST,
        "{accepted} of {total} accepted"
    );
}

/// The accepted pairs when this was last raised.
const ACCEPTED_AT_LEAST: usize = 444;
