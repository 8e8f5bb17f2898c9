//! `rdma-bench sweep` on the host, with a synthetic command: `sh -c` appends its arguments and
//! SWEEP_REP to a log and prints one of our JSON summary lines whose rate is a * b + rep.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rdma-bench");

/// The synthetic benchmark: $1 = log, $2 = a, $3 = b. `a=fail` exits 3 without a result;
/// `a=slow` sleeps 30 s first; `a=lat` prints a perftest latency document instead.
const SCRIPT: &str = r#"echo "$2 $3 $SWEEP_REP" >> "$1"
case $2 in
  fail) echo "synthetic failure" >&2; exit 3 ;;
  slow) exec sleep 30 ;;
  lat) echo "{\"test_info\":{\"test\":\"RDMA_Write_Latency_Test\"},\"results\":{\"MsgSize\":$3,\"t_min\":1,\"t_max\":9,\"t_typical\":2,\"t_avg\":$((3 + SWEEP_REP)),\"t_stdev\":1,\"percentile_99\":8,\"percentile_99.9\":9}}"; exit 0 ;;
esac
echo "main: Total throughput = 99 Mops"
echo "{\"bench\":\"synthetic\",\"op\":\"WRITE\",\"size\":$3,\"summary\":true,\"ok\":true,\"threads\":1,\"mops\":$(( $2 * $3 + SWEEP_REP ))}""#;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("rdma-bench-sweep-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn path(&self, f: &str) -> String {
        self.0.join(f).to_string_lossy().into_owned()
    }
    fn read(&self, f: &str) -> String {
        std::fs::read_to_string(self.0.join(f)).unwrap_or_default()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `rdma-bench sweep FLAGS -- sh -c SCRIPT sh LOG {a} {b}`.
fn sweep_cmd(d: &Dir, flags: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("sweep")
        .args(flags)
        .args(["--out", &d.path("s"), "--label", "syn", "--"])
        .args(["sh", "-c", SCRIPT, "sh", &d.path("log"), "{a}", "{b}"]);
    c
}

fn sweep(d: &Dir, flags: &[&str]) -> Output {
    sweep_cmd(d, flags).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn statistics_of_known_values_are_exact() {
    let d = Dir::new("stats");
    let o = sweep(
        &d,
        &["--param", "a=1,2", "--param", "b=10..20+10", "--reps", "3"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        d.read("s.csv"),
        "label,a,b,metric,unit,n,median,mean,min,max,ci95_low,ci95_high,untrusted\n\
         syn,1,10,mops,Mops,3,11,11,10,12,8.515662,13.484338,0\n\
         syn,1,20,mops,Mops,3,21,21,20,22,18.515662,23.484338,0\n\
         syn,2,10,mops,Mops,3,21,21,20,22,18.515662,23.484338,0\n\
         syn,2,20,mops,Mops,3,41,41,40,42,38.515662,43.484338,0\n"
    );
    let j: serde_json::Value = serde_json::from_str(&d.read("s.json")).unwrap();
    assert_eq!(j["label"], "syn");
    assert_eq!(j["params"], serde_json::json!(["a", "b"]));
    assert_eq!(j["metric"], "mops");
    assert_eq!(j["reps"], 3);
    assert_eq!(j["command"][0], "sh");
    let p = &j["points"][3];
    assert_eq!(p["params"], serde_json::json!({"a": 2, "b": 20}));
    assert_eq!(p["op"], "WRITE");
    let m = &p["metrics"]["mops"];
    assert_eq!(m["unit"], "Mops");
    assert_eq!(m["n"], 3);
    assert_eq!(m["median"], 41.0);
    assert_eq!(m["min"], 40.0);
    assert_eq!(m["max"], 42.0);
    assert_eq!(m["ci95_low"], 38.515662);
    // Values in run order: rep 0, 1, 2.
    assert_eq!(m["values"], serde_json::json!([40.0, 41.0, 42.0]));
    // The summary table names every point.
    let out = text(&o.stdout);
    assert!(out.starts_with("a  b   n  median [Mops]"), "{out}");
    assert!(
        out.contains("2  20  3  41.0000        40.0000  42.0000  38.5157 .. 43.4843"),
        "{out}"
    );
    // An even count: the median is the mean of the middle two.
    let d = Dir::new("stats4");
    let o = sweep(&d, &["--param", "a=1", "--param", "b=10", "--reps", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        d.read("s.csv").lines().nth(1),
        Some("syn,1,10,mops,Mops,4,11.5,11.5,10,13,9.446028,13.553972,0")
    );
}

#[test]
fn repetitions_alternate_their_order() {
    let d = Dir::new("order");
    let o = sweep(&d, &["--param", "a=1,2,3", "--param", "b=1", "--reps", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        d.read("log"),
        "1 1 0\n2 1 0\n3 1 0\n3 1 1\n2 1 1\n1 1 1\n1 1 2\n2 1 2\n3 1 2\n"
    );
    let runs = d.read("s.runs.csv");
    assert_eq!(
        runs.lines().next(),
        Some("a,b,rep,ok,metric,unit,value,seconds")
    );
    assert!(
        runs.lines()
            .nth(4)
            .unwrap()
            .starts_with("3,1,1,1,mops,Mops,4,"),
        "{runs}"
    );
}

#[test]
fn a_rerun_makes_only_the_missing_runs() {
    let d = Dir::new("resume");
    let flags = ["--param", "a=1,2,3", "--param", "b=10", "--reps", "2"];
    assert_eq!(sweep(&d, &flags).status.code(), Some(0));
    let runs = d.read("s.runs.csv");
    assert_eq!(runs.lines().count(), 7);
    // Drop a=2 rep 0 and a=3 rep 1, as if the sweep had been stopped before them.
    let kept: Vec<&str> = runs
        .lines()
        .filter(|l| !l.starts_with("2,10,0,") && !l.starts_with("3,10,1,"))
        .collect();
    assert_eq!(kept.len(), 5);
    std::fs::write(d.path("s.runs.csv"), kept.join("\n") + "\n").unwrap();
    std::fs::remove_file(d.path("log")).unwrap();
    let o = sweep(&d, &flags);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(d.read("log"), "2 10 0\n3 10 1\n");
    assert!(
        text(&o.stderr).contains("4 runs already in"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(d.read("s.runs.csv").lines().count(), 7);
    for line in d.read("s.csv").lines().skip(1) {
        assert!(line.contains(",mops,Mops,2,"), "{line}");
    }
    // Complete: nothing runs again.
    std::fs::remove_file(d.path("log")).unwrap();
    assert_eq!(sweep(&d, &flags).status.code(), Some(0));
    assert_eq!(d.read("log"), "");
}

#[test]
fn placeholders_and_flags_are_checked_before_anything_runs() {
    let d = Dir::new("placeholders");
    let run = |args: &[&str]| {
        let o = Command::new(BIN).arg("sweep").args(args).output().unwrap();
        (o.status.code(), text(&o.stderr))
    };
    let (code, err) = run(&[
        "--param",
        "size=8",
        "--out",
        &d.path("x"),
        "--",
        "echo",
        "8",
    ]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "rdma-bench sweep: --param size is not used: put {size} in the command (e.g. --size {size})\n"
    );
    let (code, err) = run(&["--out", &d.path("x"), "--", "echo", "{size}"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        "rdma-bench sweep: the command has {size} but no --param size=VALUES\n"
    );
    let (code, err) = run(&["--param", "size=0..8", "--", "echo", "{size}"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("doubles from 0"), "{err}");
    let (code, err) = run(&["--param", "s=1", "--metric", "iops", "--", "echo", "{s}"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--metric iops: not a metric"), "{err}");
    assert!(!Path::new(&d.path("x.runs.csv")).exists());
    // A different header under the same prefix.
    std::fs::write(
        d.path("y.runs.csv"),
        "size,rep,ok,metric,unit,value,seconds\n",
    )
    .unwrap();
    let (code, err) = run(&["--param", "a=1", "--out", &d.path("y"), "--", "echo", "{a}"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("was written by another sweep"), "{err}");
}

#[test]
fn failed_runs_are_recorded_and_only_all_failing_is_fatal() {
    let d = Dir::new("fail");
    let o = sweep(
        &d,
        &["--param", "a=1,fail", "--param", "b=10", "--reps", "2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let runs = d.read("s.runs.csv");
    assert_eq!(
        runs.lines().filter(|l| l.starts_with("fail,10,")).count(),
        2
    );
    assert!(
        runs.lines()
            .any(|l| l.starts_with("fail,10,0,0,mops,Mops,,")),
        "{runs}"
    );
    let err = text(&o.stderr);
    assert!(
        err.contains("a=fail b=10 rep 0 failed (exit code 3; last line: synthetic failure)"),
        "{err}"
    );
    assert!(err.contains("2 of 4 runs failed"), "{err}");
    assert_eq!(d.read("s.csv").lines().count(), 2);
    let d = Dir::new("allfail");
    let o = sweep(&d, &["--param", "a=fail", "--param", "b=10", "--reps", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("every run failed"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn every_metric_is_kept_and_the_default_follows_the_output() {
    let d = Dir::new("lat");
    let o = sweep(
        &d,
        &["--param", "a=lat", "--param", "b=8,64", "--reps", "2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // No mops printed: the first metric printed, the average latency.
    assert!(d.read("s.runs.csv").contains(",lat_avg_us,us,3,"));
    let j: serde_json::Value = serde_json::from_str(&d.read("s.json")).unwrap();
    assert_eq!(j["metric"], "lat_avg_us");
    let m = &j["points"][1]["metrics"];
    for k in [
        "lat_avg_us",
        "lat_median_us",
        "lat_p99_us",
        "lat_p999_us",
        "lat_min_us",
        "lat_max_us",
    ] {
        assert_eq!(m[k]["n"], 2, "{k}");
    }
    assert_eq!(m["lat_avg_us"]["values"], serde_json::json!([3.0, 4.0]));
    assert_eq!(m["lat_p99_us"]["median"], 8.0);
    assert_eq!(d.read("s.csv").lines().count(), 1 + 2 * 6);
}

#[test]
fn sigint_keeps_what_was_measured_and_exits_130() {
    let d = Dir::new("sigint");
    let child = sweep_cmd(
        &d,
        &["--param", "a=1,slow,3", "--param", "b=10", "--reps", "1"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let t0 = Instant::now();
    while !d.read("log").contains("slow") {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the slow run never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    // Stopped by the SIGINT the sweep passes on, not after the 30 s sleep.
    assert!(t0.elapsed() < Duration::from_secs(15));
    assert!(
        text(&o.stderr).contains("stopped: 1 runs made"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(d.read("log"), "1 10 0\nslow 10 0\n");
    let runs = d.read("s.runs.csv");
    assert_eq!(runs.lines().count(), 2, "{runs}");
    assert_eq!(
        d.read("s.csv").lines().nth(1),
        Some("syn,1,10,mops,Mops,1,10,10,10,10,10,10,0")
    );
}

#[test]
fn a_resumed_sweep_keeps_the_metric_of_its_ok_runs() {
    // The failed run comes first and its row can only guess the metric (mops); the ok run's
    // metric is the sweep's, also after a rerun.
    let d = Dir::new("resume-metric");
    let flags = ["--param", "a=fail,lat", "--param", "b=8", "--reps", "1"];
    assert_eq!(sweep(&d, &flags).status.code(), Some(0));
    let runs = d.read("s.runs.csv");
    assert!(runs.contains("\nfail,8,0,0,mops,Mops,,"), "{runs}");
    assert!(runs.contains("\nlat,8,0,1,lat_avg_us,us,3,"), "{runs}");
    let o = sweep(&d, &flags);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(d.read("log"), "fail 8 0\nlat 8 0\nfail 8 0\n");
    let j: serde_json::Value = serde_json::from_str(&d.read("s.json")).unwrap();
    assert_eq!(j["metric"], "lat_avg_us");
    assert!(d
        .read("s.runs.csv")
        .lines()
        .last()
        .unwrap()
        .starts_with("fail,8,0,0,lat_avg_us,us,,"));
}

#[test]
fn a_run_past_run_timeout_is_stopped_and_recorded_as_failed() {
    let d = Dir::new("run-timeout");
    let t0 = Instant::now();
    let o = sweep(
        &d,
        &[
            "--param",
            "a=1,slow",
            "--param",
            "b=10",
            "--reps",
            "1",
            "--run-timeout",
            "1",
        ],
    );
    // The slow run sleeps 30 s: it is stopped after 1 s, the sweep goes on and ends.
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("slow b=10 rep 0 failed (still running after --run-timeout 1;"),
        "{}",
        text(&o.stderr)
    );
    let runs = d.read("s.runs.csv");
    assert!(runs.contains("\nslow,10,0,0,"), "{runs}");
    assert!(runs.contains("\n1,10,0,1,"), "{runs}");
    let o = sweep(
        &d,
        &["--param", "a=1", "--param", "b=10", "--run-timeout", "0"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("'0' is not a positive number of seconds"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn another_command_never_resumes_a_sweeps_runs() {
    let d = Dir::new("other-command");
    let flags = ["--param", "a=1,2", "--param", "b=10", "--reps", "1"];
    assert_eq!(sweep(&d, &flags).status.code(), Some(0));
    // The same --out and parameters, another command: refused before anything runs.
    std::fs::remove_file(d.path("log")).unwrap();
    let o = sweep_cmd(&d, &flags).arg("extra").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("s.runs.csv holds 2 runs of another command")
            && err.contains("give another --out, or remove")
            && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(d.read("log"), "", "nothing ran");
    // The same command resumes (here: nothing left to run).
    assert_eq!(sweep(&d, &flags).status.code(), Some(0));
    assert_eq!(d.read("log"), "");
}
