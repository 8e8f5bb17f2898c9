//! `rdma-bench history` and `plot --trend` on recorded tool output (host-only): record, check
//! against the median and a baseline, concurrent recorders, refused databases left untouched, a
//! trend SVG parsed as XML, and the Prometheus file through promtool.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("history")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create tmp dir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn rdma_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rdma-bench"))
        .args(args)
        .output()
        .expect("run rdma-bench")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs and asserts the exit code; returns stdout.
fn expect(code: i32, args: &[&str]) -> String {
    let o = rdma_bench(args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?}: stdout:\n{}stderr:\n{}",
        out(&o),
        err(&o)
    );
    out(&o)
}

/// Asserts a refusal: exit `code`, exactly one stderr line, containing `what`.
fn refused(code: i32, args: &[&str], what: &str) -> String {
    let o = rdma_bench(args);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {e}");
    let first = e.lines().next().unwrap_or("");
    assert!(first.contains(what), "{args:?}: wanted {what:?} in {e:?}");
    if !first.starts_with("error:") {
        // Ours, not clap's (clap adds its usage lines).
        assert_eq!(e.lines().count(), 1, "{args:?}: one line, got {e:?}");
    }
    first.to_string()
}

/// `fixture`'s summary line (our --json) with mops scaled by `k` and `trusted` set.
fn ours(d: &Path, name: &str, k: f64, trusted: bool) -> PathBuf {
    let text = std::fs::read_to_string(data("history/rw-tput-sender-write-s32.json")).unwrap();
    let mut lines = Vec::new();
    for l in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v.get("summary").is_some() {
            let m = v["mops"].as_f64().unwrap();
            v["mops"] = serde_json::json!(m * k);
            v["trusted"] = serde_json::json!(trusted);
            if !trusted {
                v["questionable"] = serde_json::json!(["retransmission"]);
                v["counters"]["rxe0:1"]["duplicate_request"] = serde_json::json!(566);
            }
        }
        lines.push(v.to_string());
    }
    let p = d.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

/// perftest's latency JSON (4.5's, as recorded) with its latencies scaled by `k`.
fn latency(d: &Path, name: &str, k: f64) -> PathBuf {
    let text = std::fs::read_to_string(data("compare/perftest-write-lat-s8.json")).unwrap();
    let scaled: Vec<String> = text
        .lines()
        .map(|l| {
            let t = l.trim();
            for key in [
                "t_min",
                "t_max",
                "t_typical",
                "t_avg",
                "t_stdev",
                "percentile_99",
            ] {
                if let Some(v) = t.strip_prefix(&format!("{key}:")) {
                    let v: f64 = v.trim().trim_end_matches(',').parse().unwrap();
                    return format!("{key}: {:.2},", v * k);
                }
            }
            l.to_string()
        })
        .collect();
    let p = d.join(name);
    std::fs::write(&p, scaled.join("\n")).unwrap();
    p
}

/// `history baseline DB --name NAME --run RUN`.
fn name_baseline(db: &Path, name: &str, run: &str) {
    let o = expect(
        0,
        &["history", "baseline", s(db), "--name", name, "--run", run],
    );
    assert_eq!(o, format!("baseline {name}: run {run}\n"));
}

fn count_runs(db: &Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn two_runs_pass_and_a_run_20_percent_slower_is_a_regression() {
    let d = dir("throughput");
    let db = d.join("h.db");
    let (a, b) = (
        ours(&d, "a.json", 1.0, true),
        ours(&d, "b.json", 1.01, true),
    );
    let rec = expect(
        0,
        &[
            "history",
            "record",
            s(&db),
            s(&a),
            "--at",
            "2026-05-01 10:00:00",
        ],
    );
    assert!(rec.starts_with("recorded run 1 "), "{rec}");
    expect(
        0,
        &[
            "history",
            "record",
            s(&db),
            s(&b),
            "--at",
            "2026-05-02 10:00:00",
        ],
    );
    let ok = expect(0, &["history", "check", s(&db)]);
    assert!(
        ok.contains("check: 1 run(s)") && ok.contains(": 0 regression(s)"),
        "{ok}"
    );
    name_baseline(&db, "good", "1");

    let slow = ours(&d, "slow.json", 0.8, true);
    expect(0, &["history", "record", s(&db), s(&slow)]);
    let bad = expect(6, &["history", "check", s(&db), "--baseline", "good"]);
    let line = bad
        .lines()
        .find(|l| l.starts_with("regression: run 3 "))
        .unwrap_or_else(|| panic!("no regression line: {bad}"));
    assert!(
        line.contains("rw-tput-sender op=WRITE postlist=1 size=32 threads=1")
            && line.contains("mops baseline good (run 1): 0.025872 now: 0.020698 (-20.0 %"),
        "{line}"
    );
    // Against the median of the two earlier runs, too; and within a wider allowance it passes.
    let median = expect(6, &["history", "check", s(&db)]);
    assert!(
        median.contains("mops median of 2 earlier run(s)"),
        "{median}"
    );
    expect(
        0,
        &[
            "history",
            "check",
            s(&db),
            "--baseline",
            "good",
            "--max-drop",
            "25",
        ],
    );

    let list = expect(0, &["history", "list", s(&db), "--tool", "rw-tput-sender"]);
    let rows: Vec<&str> = list.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{list}");
    assert!(rows[0].starts_with("1   2026-05-01T10:00:00Z"), "{list}");
    assert!(
        rows[2].contains("rxe0:1") && rows[2].contains("mops 0.020698") && rows[2].ends_with("yes"),
        "{list}"
    );
    assert_eq!(
        expect(0, &["history", "list", s(&db), "--last", "1"])
            .lines()
            .count(),
        2
    );
}

#[test]
fn latency_30_percent_higher_is_a_regression() {
    let d = dir("latency");
    let db = d.join("h.db");
    for (i, k) in [1.0, 1.02].iter().enumerate() {
        let f = latency(&d, &format!("lat{i}.json"), *k);
        expect(0, &["history", "record", s(&db), s(&f)]);
    }
    expect(0, &["history", "check", s(&db)]);
    let slow = latency(&d, "slow.json", 1.3);
    expect(0, &["history", "record", s(&db), s(&slow)]);
    let o = expect(6, &["history", "check", s(&db)]);
    let metrics: Vec<&str> = o
        .lines()
        .filter(|l| l.starts_with("regression: run 3 (ib_write_lat op=WRITE postlist=1 size=8"))
        .filter_map(|l| l.split("): ").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(
        metrics,
        ["lat_avg_us", "lat_median_us", "lat_p99_us"],
        "{o}"
    );
    // Against the median of 1.0 and 1.02 times the recorded latencies.
    assert!(o.contains("(+28.7 %, limit +10 %)"), "{o}");
    // Lower latency is never a regression.
    let fast = latency(&d, "fast.json", 0.5);
    expect(0, &["history", "record", s(&db), s(&fast)]);
    expect(0, &["history", "check", s(&db), "--max-rise", "0"]);
}

#[test]
fn median_of_n_ignores_an_outlier_and_questionable_runs() {
    let d = dir("median");
    let db = d.join("h.db");
    for (i, (k, trusted)) in [(1.0, true), (1.0, true), (5.0, true), (0.2, false)]
        .iter()
        .enumerate()
    {
        let f = ours(&d, &format!("r{i}.json"), *k, *trusted);
        expect(0, &["history", "record", s(&db), s(&f)]);
    }
    let near = ours(&d, "near.json", 0.97, true);
    expect(0, &["history", "record", s(&db), s(&near)]);
    // Median of runs 1..3 (run 4 is questionable): 1.0; -3 % is within 5 %.
    let o = expect(0, &["history", "check", s(&db), "--median-of", "3"]);
    assert!(o.contains("0 regression(s)"), "{o}");
    // The last trusted one alone is the outlier: -80.6 %.
    let o = expect(6, &["history", "check", s(&db), "--median-of", "1"]);
    assert!(
        o.contains("mops median of 1 earlier run(s): 0.129362 now: 0.025096 (-80.6 %"),
        "{o}"
    );
    // Nothing earlier than run 1.
    refused(
        2,
        &["history", "check", s(&db), "--run", "1"],
        "no earlier trusted run",
    );
}

#[test]
fn two_recorders_at_once_both_land() {
    let d = dir("concurrent");
    let db = d.join("h.db");
    let sweep = data("compare/sweep-wpl.json");
    for round in 0..3 {
        let kids: Vec<_> = (0..4)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_rdma-bench"))
                    .args(["history", "record", s(&db), s(&sweep)])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn a recorder")
            })
            .collect();
        for k in kids {
            let o = k.wait_with_output().unwrap();
            assert!(o.status.success(), "round {round}: {}", err(&o));
        }
    }
    // 4 points per file, 4 recorders per round, 3 rounds.
    assert_eq!(count_runs(&db), 4 * 4 * 3);
    let c = rusqlite::Connection::open(&db).unwrap();
    let batches: i64 = c
        .query_row("SELECT count(DISTINCT batch) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(batches, 12);
}

/// Every command on `db` is refused with `what`, and the file's bytes stay as they were.
fn refused_untouched(db: &Path, what: &str) {
    let before = std::fs::read(db).unwrap();
    let f = data("history/rw-tput-sender-write-s32.json");
    let out = db.with_extension("prom");
    for args in [
        vec!["history", "record", s(db), s(&f)],
        vec!["history", "list", s(db)],
        vec!["history", "check", s(db)],
        vec!["history", "baseline", s(db), "--name", "x"],
        vec!["history", "prom", s(db), s(&out)],
        vec!["plot", "--trend", s(db), "--metric", "mops"],
    ] {
        refused(2, &args, what);
        assert_eq!(
            std::fs::read(db).unwrap(),
            before,
            "{args:?} changed the file"
        );
    }
    assert!(!out.exists());
}

#[test]
fn a_corrupt_database_is_refused_and_left_as_it_was() {
    let d = dir("corrupt");
    let db = d.join("h.db");
    // Random bytes (xorshift), 8 KiB.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&db, &bytes).unwrap();
    refused_untouched(&db, "not an rdma-bench history database");
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no -wal, -shm or temp file"
    );
}

#[test]
fn a_newer_schema_or_a_foreign_database_is_refused_untouched() {
    let d = dir("schema");
    let db = d.join("future.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('schema_version', '99');
             CREATE TABLE runs (id INTEGER PRIMARY KEY);",
        )
        .unwrap();
    }
    refused_untouched(
        &db,
        "history schema version 99 is newer than this rdma-bench's (1)",
    );
    let other = d.join("other.db");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    refused_untouched(&other, "an SQLite database, but not an rdma-bench history");
}

#[test]
fn recording_into_a_read_only_place_fails_and_creates_nothing() {
    let d = dir("readonly");
    let f = data("history/rw-tput-sender-write-s32.json");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let place = if root {
        // root writes anywhere it can chmod; /proc takes no new files.
        PathBuf::from("/proc/rdma-bench-history-test/h.db")
    } else {
        let ro = d.join("ro");
        std::fs::create_dir(&ro).unwrap();
        let mut p = std::fs::metadata(&ro).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o555);
        std::fs::set_permissions(&ro, p).unwrap();
        ro.join("h.db")
    };
    let o = rdma_bench(&["history", "record", s(&place), s(&f)]);
    let e = err(&o);
    assert_ne!(o.status.code(), Some(0), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("cannot open or create") && e.contains(s(&place)),
        "{e}"
    );
    assert!(!place.exists());
    if let Some(parent) = place.parent().filter(|p| p.exists()) {
        assert_eq!(std::fs::read_dir(parent).unwrap().count(), 0);
    }
}

#[test]
fn suite_and_sweep_files_record_one_run_per_point() {
    let d = dir("formats");
    let db = d.join("h.db");
    let o = expect(
        0,
        &[
            "history",
            "record",
            s(&db),
            s(&data("plot/results.csv")),
            s(&data("compare/sweep-wpl.json")),
            s(&data("compare/perftest-write-bw-s32.json")),
        ],
    );
    assert!(
        o.starts_with("recorded runs 1..10 (10 from 3 files)"),
        "{o}"
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let q = |sql: &str| -> Vec<String> {
        let mut st = c.prepare(sql).unwrap();
        let rows = st.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert_eq!(
        q("SELECT params FROM runs WHERE source = 'suite' AND tool = 'herd'"),
        [r#"{"flags":"--num-threads 2, --window 32","op":"GET","role":"client","size":32}"#]
    );
    assert_eq!(
        q(
            "SELECT name || '=' || value || ' ' || better FROM metrics WHERE run_id = \
           (SELECT id FROM runs WHERE tool = 'rw-postlist-latency')"
        ),
        [
            "lat_avg_us=4.2 lower",
            "lat_median_us=4.1 lower",
            "lat_p99_us=6.3 lower"
        ]
    );
    assert_eq!(
        q("SELECT params FROM runs WHERE source = 'sweep' ORDER BY id"),
        [1, 2, 4, 8].map(|p| format!(r#"{{"op":"WRITE","postlist":{p}}}"#))
    );
    assert_eq!(
        q("SELECT device FROM runs WHERE source = 'perftest'"),
        ["rxe0"]
    );
}

#[test]
fn the_trend_chart_has_a_series_per_shape_a_baseline_and_marked_points() {
    let d = dir("trend");
    let db = d.join("h.db");
    let days = [
        "2026-05-01 10:00:00",
        "2026-05-02 10:00:00",
        "2026-05-03 10:00:00",
    ];
    for (i, (k, trusted)) in [(1.0, true), (1.1, false), (0.9, true)].iter().enumerate() {
        let f = ours(&d, &format!("r{i}.json"), *k, *trusted);
        let bw = data("compare/perftest-write-bw-s32.json");
        expect(
            0,
            &["history", "record", s(&db), s(&f), s(&bw), "--at", days[i]],
        );
    }
    name_baseline(&db, "good", "1");
    let svg = d.join("trend.svg");
    let o = expect(
        0,
        &["plot", "--trend", s(&db), "--metric", "mops", "-o", s(&svg)],
    );
    assert!(o.starts_with("wrote ") && o.contains("(3 series)"), "{o}");
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert!(doc.root_element().has_tag_name("svg"));
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    for want in [
        format!("{host} rxe0 rw-tput-sender op=WRITE postlist=1 size=32 threads=1"),
        format!("{host} rxe0 ib_write_bw op=WRITE postlist=1 size=32"),
        format!("baseline good: {host} rxe0 rw-tput-sender op=WRITE postlist=1 size=32 threads=1 (run value Mops)"),
        "hours since 2026-05-01T10:00:00Z".to_string(),
        "mops over time (".to_string() + s(&db) + ")",
    ] {
        assert!(texts.contains(&want), "{want:?} not in {texts:?}");
    }
    // The questionable run (day 2) is ringed and marked, as plot marks points.
    assert_eq!(texts.iter().filter(|t| *t == "?").count(), 1, "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("? questionable")));
    // --tool narrows it to one shape (and the baseline).
    let o = expect(
        0,
        &[
            "plot",
            "--trend",
            s(&db),
            "--metric",
            "mops",
            "--tool",
            "ib_write_bw",
            "-o",
            s(&svg),
        ],
    );
    assert!(o.contains("(1 series)"), "{o}");
}

#[test]
fn the_prometheus_file_passes_promtool_and_escapes_labels() {
    let d = dir("prom");
    let db = d.join("h.db");
    let f = ours(&d, "r.json", 1.0, false);
    let lat = data("compare/perftest-write-lat-s8.json");
    let host = "lab \"a\"\\b";
    expect(
        0,
        &["history", "record", s(&db), s(&f), s(&lat), "--host", host],
    );
    let f2 = ours(&d, "r2.json", 2.0, true);
    expect(0, &["history", "record", s(&db), s(&f2), "--host", host]);
    let prom = d.join("rdma_bench.prom");
    let o = expect(0, &["history", "prom", s(&db), s(&prom)]);
    assert!(o.contains("(2 run(s), the latest of each shape)"), "{o}");
    let text = std::fs::read_to_string(&prom).unwrap();
    let labels = r#"host="lab \"a\"\\b",device="rxe0",port="1",tool="rw-tput-sender",op="WRITE",postlist="1",size="32",threads="1""#;
    for want in [
        "# TYPE rdma_bench_mops gauge".to_string(),
        format!("rdma_bench_mops{{{labels}}} 0.05174460190977997"),
        format!("rdma_bench_trusted{{{labels}}} 1"),
        format!(r#"rdma_bench_port_delta{{{labels},counter="sent_pkts"}} 103905"#),
        r#"tool="ib_write_lat",op="WRITE",postlist="1",size="8",stat="p99"}"#.to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} not in:\n{text}");
    }
    assert_eq!(
        std::fs::read_dir(&d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".tmp")
            })
            .count(),
        0,
        "the temp file was renamed"
    );
    let file = std::fs::File::open(&prom).unwrap();
    let check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(file)
        .output()
        .expect("promtool (Debian: apt-get install prometheus; softroce.sh setup installs it)");
    assert!(
        check.status.success(),
        "promtool check metrics: {}{}\n{text}",
        out(&check),
        err(&check)
    );
}

#[test]
fn bad_input_is_one_line_naming_what_was_typed() {
    let d = dir("bad");
    let db = d.join("h.db");
    let f = data("history/rw-tput-sender-write-s32.json");
    refused(2, &["history", "list", s(&db)], "no such history database");
    assert!(!db.exists());
    refused(
        2,
        &["history", "record", s(&db), s(&f), "--at", "yesterday-ish"],
        "--at yesterday-ish: not a time",
    );
    refused(
        2,
        &["history", "record", s(&db), "/nonexistent/r.json"],
        "cannot read /nonexistent/r.json",
    );
    let empty = d.join("empty.txt");
    std::fs::write(&empty, "nothing here\n").unwrap();
    refused(
        2,
        &["history", "record", s(&db), s(&empty)],
        "no result in it",
    );
    assert!(!db.exists(), "a failed record makes no database");
    expect(0, &["history", "record", s(&db), s(&f)]);
    refused(
        2,
        &["history", "check", s(&db), "--run", "99"],
        "--run 99: no such run",
    );
    refused(
        2,
        &["history", "check", s(&db), "--baseline", "nope"],
        "--baseline nope: no such baseline",
    );
    refused(
        2,
        &["history", "check", s(&db), "--max-drop=-5"],
        "--max-drop -5",
    );
    refused(
        2,
        &["history", "check", s(&db), "--median-of", "0"],
        "--median-of",
    );
    refused(2, &["history", "list", s(&db), "--last", "x"], "--last");
    refused(
        2,
        &["history", "baseline", s(&db), "--name", "b", "--run", "7"],
        "--run 7: no such run",
    );
    refused(
        2,
        &[
            "history",
            "prom",
            s(&db),
            s(&d.join("p.prom")),
            "--run",
            "5",
        ],
        "--run 5: no such run",
    );
    refused(
        2,
        &["plot", "--trend", s(&db), "--metric", "speed"],
        "--metric speed: unknown metric",
    );
    refused(2, &["plot", "--trend", s(&db)], "--trend needs a --metric");
    refused(
        2,
        &["plot", "--trend", s(&db), "--metric", "lat_p99_us"],
        "has lat_p99_us",
    );
}
