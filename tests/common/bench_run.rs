//! Running benchmark binaries as a user would, in pairs, against the testbed's device, and
//! checking what they print.

#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};

use super::memcached::Memcached;
use super::stdout::read_stdout_until;

/// Seconds a counting side runs.
pub const SECS: &str = "3";

pub fn device_args() -> Vec<String> {
    let dev = std::env::var("RDMA_BENCH_DEVICE")
        .expect("RDMA_BENCH_DEVICE is not set: device tests run through bench_scripts/test.sh");
    let mut v = vec!["--device".to_string(), dev];
    if let Ok(g) = std::env::var("RDMA_BENCH_GID_INDEX") {
        v.extend(["--gid-index".to_string(), g]);
    }
    v
}

pub fn spawn(bin: &str, m: &Memcached, args: &[&str], duration: &str) -> Child {
    Command::new(bin)
        .args(args)
        .args(device_args())
        .args([
            "--registry",
            &m.addr(),
            "--duration",
            duration,
            "--json",
            "--connect-timeout",
            "60",
        ])
        // A variable of a provider the testbed does not have: a benchmark on rxe or siw must
        // neither report nor touch it (check_counting).
        .env("MLX5_SINGLE_THREADED", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("benchmark binary runs")
}

pub fn finish(c: Child, what: &str) -> String {
    let out: Output = c.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

/// Waits for every process of one run, then checks they all succeeded; a failure shows every
/// process's output (a client's error is often explained by its server's).
pub fn finish_all(procs: Vec<(Child, &str)>) -> Vec<String> {
    let outs: Vec<(String, Output)> = procs
        .into_iter()
        .map(|(c, what)| (what.to_string(), c.wait_with_output().unwrap()))
        .collect();
    if outs.iter().any(|(_, o)| !o.status.success()) {
        let all: Vec<String> = outs
            .iter()
            .map(|(what, o)| {
                format!(
                    "--- {what} ({}):\n{}\n{}",
                    o.status,
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                )
            })
            .collect();
        panic!("a process of the run failed:\n{}", all.join("\n"));
    }
    outs.into_iter()
        .map(|(_, o)| String::from_utf8_lossy(&o.stdout).into_owned())
        .collect()
}

/// Runs `bin` as server (`server_args`) and client (`client_args` + --is-client 1); the passive
/// side gets a longer duration (it leaves on the active side's "done").
pub fn run_pair(
    bin: &str,
    server_args: &[&str],
    client_args: &[&str],
    server_secs: &str,
    client_secs: &str,
) -> (String, String) {
    let m = Memcached::start();
    let server = spawn(bin, &m, server_args, server_secs);
    let mut cargs = client_args.to_vec();
    cargs.extend(["--is-client", "1"]);
    let client = spawn(bin, &m, &cargs, client_secs);
    let s = finish(server, "server");
    let c = finish(client, "client");
    (s, c)
}

/// Checks a counting side's output: per-thread IOPS lines for every thread and the summary line
/// (the text a person reads), then what the results reader (compare, plot, sweep) takes from it:
/// every thread's first interval non-zero, and a summary with the run's facts whose rate is the
/// text line's. Returns the summary's Mops.
pub fn check_counting(out: &str, role: &str, threads: usize, bench: &str, op: &str) -> f64 {
    use rdma_bench::tools::results::{parse, Kind, Metric, Source};
    for t in 0..threads {
        let prefix = format!("main: {role} {t}: ");
        assert!(
            out.lines()
                .any(|l| l.starts_with(&prefix) && l.ends_with(" IOPS")),
            "no rate line for {role} {t}:\n{out}"
        );
    }
    let total: f64 = out
        .lines()
        .find_map(|l| {
            l.strip_prefix("main: Total throughput = ")?
                .strip_suffix(" Mops")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no summary line:\n{out}"));
    let ms = parse(out);
    let role = role.to_lowercase();
    let role = role.as_str();
    let ours = |kind: Kind| {
        ms.iter().filter(move |m| {
            m.source == Source::Ours && m.kind == kind && m.role.as_deref() == Some(role)
        })
    };
    for t in 0..threads as u64 {
        let first = ours(Kind::Interval)
            .find(|m| m.thread == Some(t))
            .unwrap_or_else(|| panic!("the reader found no interval of thread {t}:\n{out}"));
        assert_eq!(
            (first.bench.as_str(), first.op.as_deref()),
            (bench, Some(op)),
            "{first:?}"
        );
        assert!(
            first.size.is_some() && first.postlist.is_some(),
            "the interval lacks the run's shape: {first:?}"
        );
        let mops = first.metrics.get(Metric::Mops).unwrap_or(0.0);
        assert!(
            mops > 0.0,
            "thread {t} measured nothing in its first second:\n{out}"
        );
    }
    // The run's summary (a latency summary, rw-postlist-latency's, has no thread count).
    let summary = ours(Kind::Summary)
        .find(|m| m.threads.is_some())
        .unwrap_or_else(|| panic!("the reader found no summary:\n{out}"));
    assert_eq!(
        (
            summary.bench.as_str(),
            summary.op.as_deref(),
            summary.threads
        ),
        (bench, Some(op), Some(threads as u64)),
        "{summary:?}"
    );
    let mops = summary.metrics.get(Metric::Mops).unwrap_or(0.0);
    assert!(mops > 0.0, "zero total:\n{out}");
    check_provider_env(out);
    assert!((mops - total).abs() < 1e-3, "JSON {mops} vs line {total}");
    total
}

/// The summary says which provider variables were in effect; Soft-RoCE and Soft-iWARP read none
/// of the original's, so on them none is reported, set or named in the header, whatever the
/// environment has for mlx5 (spawn gives it one).
fn check_provider_env(out: &str) {
    let j = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["summary"] == true)
        .unwrap_or_else(|| panic!("no JSON summary:\n{out}"));
    assert!(
        j["provider_env"].is_object() && j["provider_env_set"].is_array(),
        "{j}"
    );
    let dev = std::env::var("RDMA_BENCH_DEVICE").unwrap_or_default();
    if dev.starts_with("rxe") || dev.starts_with("siw") {
        assert_eq!(j["provider_env"], serde_json::json!({}), "{j}");
        assert_eq!(j["provider_env_set"], serde_json::json!([]), "{j}");
        assert!(!out.contains("main: provider environment of "), "{out}");
    }
}

pub fn check_passive(out: &str, bench: &str) {
    assert!(
        out.contains(" done"),
        "passive side did not finish cleanly:\n{out}"
    );
    let last = out
        .lines()
        .rfind(|l| l.starts_with('{'))
        .expect("passive JSON summary");
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(
        (
            v["bench"].as_str(),
            v["summary"].as_bool(),
            v["passive"].as_bool()
        ),
        (Some(bench), Some(true), Some(true))
    );
    check_provider_env(out);
}

/// Checks HERD workers' store line and JSON: GET hit rate above `min_hit_rate`, batches of at
/// least one request; returns (hit rate, average batch).
pub fn check_herd_store(out: &str, min_hit_rate: f64) -> (f64, f64) {
    assert!(
        out.lines()
            .any(|l| l.starts_with("main: Workers: GET hit rate = ")),
        "no store line:\n{out}"
    );
    let kv: serde_json::Value = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["kv"] == true)
        .unwrap_or_else(|| panic!("no store JSON:\n{out}"));
    let rate = kv["get_hit_rate"].as_f64().unwrap();
    let batch = kv["avg_batch"].as_f64().unwrap();
    assert!(kv["gets"].as_u64().unwrap() > 0, "no GETs ran:\n{out}");
    assert!(rate > min_hit_rate, "GET hit rate {rate}:\n{out}");
    assert!(batch >= 1.0, "average batch {batch}:\n{out}");
    (rate, batch)
}

/// Whether a SysV segment with `key` exists (other tests' segments do not count).
pub fn shm_key_exists(key: i32) -> bool {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .any(|l| l.split_whitespace().next() == Some(&key.to_string()))
}

/// Reads `c`'s stdout until every one of `prefixes` (e.g. "main: Client 0: ") has begun a rate
/// line (one ending in " IOPS": the proof that it is measuring), 60 s at most, and returns what
/// it read, for the caller to put in front of the rest of the output. A fixed wait from the
/// start, or from the registry's ready markers, was too short on a busy guest: the process was
/// stopped before it had measured an interval.
pub fn read_to_first_rates(c: &mut Child, prefixes: &[&str]) -> String {
    let mut missing: Vec<&str> = prefixes.to_vec();
    read_stdout_until(c, &format!("rate lines for {prefixes:?}"), |l| {
        missing.retain(|p| !(l.starts_with(p) && l.trim_end().ends_with(" IOPS")));
        missing.is_empty()
    })
}

/// Waits (60 s at most) for a SysV segment with `key` to exist: polled, since a busy guest once
/// took more than a fixed 3 s to start the process that makes it.
pub fn wait_for_segment(key: i32) {
    let what = format!("a SysV segment with key {key}");
    super::wait_for(std::time::Duration::from_secs(60), &what, || {
        shm_key_exists(key)
    });
}

/// The SysV segments whose creator is one of `pids` (/proc/sysvipc/shm: key shmid perms size
/// cpid ...): a test's own, told apart from those of the tests running beside it.
pub fn segments_made_by(pids: &[u32]) -> Vec<String> {
    std::fs::read_to_string("/proc/sysvipc/shm")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter(|l| {
            l.split_whitespace()
                .nth(4)
                .is_some_and(|c| pids.iter().any(|p| p.to_string() == c))
        })
        .map(str::to_string)
        .collect()
}

/// One SIGINT to every process (as a terminal sends Ctrl-C to a whole job), then each must exit
/// 0 within 30 s; returns their outputs in order.
pub fn interrupt_all(procs: Vec<(Child, &str)>) -> Vec<String> {
    let started = std::time::Instant::now();
    for (p, _) in &procs {
        // SAFETY: signalling our own children.
        unsafe { libc::kill(p.id() as i32, libc::SIGINT) };
    }
    let outs = procs
        .into_iter()
        .map(|(p, what)| finish(p, &format!("interrupted {what}")))
        .collect();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the stop took too long"
    );
    outs
}

/// `base` then `more`.
pub fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

/// A request-region run (ws-*, HERD) of flags `a`: the master and the worker process for
/// `server_secs` at most, a client process of `clients` threads for `client_secs`; returned as
/// (client, worker, master), the order their outputs are read in.
pub fn master_workers_clients(
    bin: &str,
    m: &Memcached,
    a: &[&str],
    clients: &str,
    server_secs: &str,
    client_secs: &str,
) -> Vec<(Child, &'static str)> {
    let master = spawn(bin, m, &with(a, &["--master", "1"]), server_secs);
    let worker = spawn(bin, m, a, server_secs);
    let client = spawn(
        bin,
        m,
        &with(a, &["--is-client", "1", "--num-threads", clients]),
        client_secs,
    );
    vec![(client, "client"), (worker, "worker"), (master, "master")]
}
