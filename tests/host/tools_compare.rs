//! `rdma-bench compare` on recordings made on the Soft-RoCE testbed (tests/data/compare/, see
//! its README.md): exact tables, JSON, ratios and --fail-below.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rdma-bench");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/compare");

/// Runs `rdma-bench compare` on files of tests/data/compare: (exit code, stdout, stderr).
fn compare(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(BIN)
        .arg("compare")
        .args(args.iter().map(|a| {
            let file = [".txt", ".json", ".csv", ".log"]
                .iter()
                .any(|e| a.ends_with(e));
            if file && !a.starts_with('/') {
                format!("{DATA}/{a}")
            } else {
                a.to_string()
            }
        }))
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn perftest_against_our_tool_and_benchmark() {
    // perftest's ib_write_bw table, our write-bw (run-local.sh: both sides' tables and JSON
    // documents), our rw-tput-sender --postlist 4 (--json lines): WRITE 32 B postlist 1 matches
    // the first two; postlist 4 has no perftest counterpart here.
    let (code, out, err) = compare(&[
        "perftest-write-bw-s32.txt",
        "ours-write-bw-s32.txt",
        "ours-rw-tput-sender-write-s32-pl4.txt",
        "--label",
        "perftest",
        "--label",
        "ours-tool",
        "--label",
        "ours-rw",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "\
op     size  postlist  threads  perftest [Mops]  ours-tool [Mops]  ours-rw [Mops]  ours-tool/perftest  ours-rw/perftest
WRITE  32    1         –        0.02770          0.01002           –               0.362               –
WRITE  32    4         1        –                –                 0.02555         –                   –
"
    );
}

#[test]
fn perftest_json_says_what_its_table_says() {
    // perftest 4.5's --out_json file is not JSON (unquoted keys, trailing commas): read anyway.
    for metric in ["mops", "bw_mbps"] {
        let (code, out, err) = compare(&[
            "perftest-read-bw-s64.json",
            "perftest-read-bw-s64.txt",
            "--metric",
            metric,
            "--label",
            "json",
            "--label",
            "text",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let want = if metric == "mops" {
            "op    size  postlist  json [Mops]  text [Mops]  text/json\n\
             READ  64    1         0.006185     0.006185     1.000\n"
        } else {
            "op    size  postlist  json [MB/s]  text [MB/s]  text/json\n\
             READ  64    1         0.3800       0.3800       1.000\n"
        };
        assert_eq!(out, want);
    }
    let (code, out, _) = compare(&[
        "perftest-write-lat-s8.json",
        "perftest-write-lat-s8.txt",
        "--metric",
        "lat_p99_us",
        "--label",
        "json",
        "--label",
        "text",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "op     size  postlist  json [us]  text [us]  json/text\n\
         WRITE  8     1         14583      14583      1.000\n"
    );
}

#[test]
fn latency_ratios_are_inverted_and_fail_below_names_the_point() {
    let args = [
        "perftest-write-lat-s8.json",
        "ours-write-lat-s8.txt",
        "--label",
        "perftest",
        "--label",
        "ours",
        "--metric",
        "lat_median_us",
    ];
    let (code, out, _) = compare(&args);
    assert_eq!(code, Some(0));
    // perftest's median 17.59 us, ours 3623.48 us (the client's, as perftest's client reports):
    // ratio = perftest / ours, below 1 = ours is slower.
    assert_eq!(
        out,
        "op     size  postlist  perftest [us]  ours [us]  perftest/ours\n\
         WRITE  8     1         17.59          3623       0.005\n"
    );
    let mut strict = args.to_vec();
    strict.extend(["--fail-below", "0.5"]);
    let (code, out2, err) = compare(&strict);
    assert_eq!(
        code,
        Some(6),
        "a regression, told apart from unusable input (1)"
    );
    assert_eq!(out2, out, "the table is printed before the verdict");
    assert_eq!(
        err,
        "rdma-bench compare: perftest/ours = 0.005 at WRITE, size 8, postlist 1 is below --fail-below 0.5\n"
    );
    let mut lenient = args.to_vec();
    lenient.extend(["--fail-below", "0.001"]);
    assert_eq!(compare(&lenient).0, Some(0));
}

#[test]
fn json_output_has_values_and_ratios() {
    let (code, out, err) = compare(&[
        "perftest-write-lat-s8.json",
        "ours-write-lat-s8.txt",
        "--label",
        "perftest",
        "--label",
        "ours",
        "--metric",
        "lat_p99_us",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        r#"{"metric":"lat_p99_us","unit":"us","lower_is_better":true,"files":["perftest","ours"],"rows":[{"op":"WRITE","size":8,"postlist":1,"threads":null,"values":[14582.68,15552.052969],"trusted":[null,null],"ratios":[0.937669]}]}
"#
    );
}

#[test]
fn bad_input_is_one_clear_line() {
    let (code, _, err) = compare(&["no-such-file.txt"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("rdma-bench compare: cannot read "), "{err}");
    assert_eq!(err.lines().count(), 1);
    let (code, _, err) = compare(&["perftest-write-bw-s32.txt", "--metric", "iops"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--metric iops: not a metric (one of mops, bw_mbps"),
        "{err}"
    );
    let (code, _, err) = compare(&["perftest-write-bw-s32.txt", "--fail-below", "0"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--fail-below must be a positive ratio"),
        "{err}"
    );
    let empty = std::env::temp_dir().join(format!("compare-empty-{}.txt", std::process::id()));
    std::fs::write(&empty, "nothing measured here\n").unwrap();
    let (code, _, err) = compare(&[empty.to_str().unwrap()]);
    let _ = std::fs::remove_file(&empty);
    assert_eq!(code, Some(2));
    assert!(err.ends_with(": no results found in it\n"), "{err}");
    // A gate over files with no point in common cannot pass by default: nothing was compared.
    let (code, out, err) = compare(&[
        "perftest-write-bw-s32.txt",
        "ours-write-lat-s8.txt",
        "--fail-below",
        "0.9",
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert_eq!(
        err,
        "rdma-bench compare: --fail-below 0.9: no mops of ours-write-lat-s8 matched a point of \
         perftest-write-bw-s32 (by operation, size, postlist and threads): nothing to gate on\n"
    );
}

#[test]
fn a_real_sweep_against_single_runs_and_perftest() {
    // rdma-bench sweep --param postlist=1..8 --reps 2 over run-local.sh rw-tput-sender --size 32
    // (its JSON: postlist and op per point, no size), single runs at postlist 1 and 4, and
    // perftest's ib_write_bw -l 4, as table and as 4.5's JSON file.
    let (code, out, err) = compare(&[
        "sweep-wpl.json",
        "ours-rw-tput-sender-write-s32-pl1.txt",
        "ours-rw-tput-sender-write-s32-pl4.txt",
        "perftest-write-bw-s32-l4.txt",
        "perftest-write-bw-s32-l4.json",
        "--label",
        "sweep",
        "--label",
        "pl1",
        "--label",
        "pl4",
        "--label",
        "pt-l4",
        "--label",
        "pt-l4-json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "\
op     size  postlist  threads  sweep [Mops]  pl1 [Mops]  pl4 [Mops]  pt-l4 [Mops]  pt-l4-json [Mops]  pl1/sweep  pl4/sweep  pt-l4/sweep  pt-l4-json/sweep
WRITE  32    1         1        0.02435       0.03171     –           –             –                  1.302      –          –            –
WRITE  –     2         –        0.03269       –           –           –             –                  –          –          –            –
WRITE  32    4         1        0.03050       –           0.02555     0.03413       0.03413            –          0.838      1.119        1.119
WRITE  –     8         –        0.03615       –           –           –             –                  –          –          –            –
"
    );
    // The sweep's CSV says what its JSON says (the JSON knows the op).
    let (code, out, _) = compare(&[
        "sweep-wpl.csv",
        "sweep-wpl.json",
        "--label",
        "csv",
        "--label",
        "json",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "\
op     postlist  csv [Mops]  json [Mops]  json/csv
WRITE  1         0.02435     0.02435      1.000
WRITE  2         0.03269     0.03269      1.000
WRITE  4         0.03050     0.03050      1.000
WRITE  8         0.03615     0.03615      1.000
"
    );
}

#[test]
fn perftest_all_sizes_with_a_row_it_could_not_measure() {
    // ib_write_lat -a -n 10: 23 sizes, one of them printed as inf/-nan (left out).
    let (code, out, err) = compare(&[
        "perftest-write-lat-a.txt",
        "ours-write-lat-s8.txt",
        "--metric",
        "lat_p999_us",
        "--label",
        "pt",
        "--label",
        "ours",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 22, "{out}");
    assert_eq!(
        lines[0],
        "op     size     postlist  pt [us]  ours [us]  pt/ours"
    );
    assert_eq!(
        lines[3],
        "WRITE  8        1         38.07    23647      0.002"
    );
    assert!(!out.contains("1048576"), "{out}");
    assert!(
        lines[22].starts_with("WRITE  8388608  1         221548   –"),
        "{out}"
    );
    // ib_write_bw -a: every size a row, ours at 32 B matched.
    let (code, out, _) = compare(&[
        "perftest-write-bw-a.txt",
        "ours-write-bw-s32.txt",
        "--label",
        "pt",
        "--label",
        "ours",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().count(), 1 + 23);
    assert!(
        out.contains("\nWRITE  32       1         0.01125      0.01002      0.891\n"),
        "{out}"
    );
}

#[test]
fn a_bandwidth_sweep_of_our_tool_against_perftests_all_sizes() {
    // rdma-bench sweep --param size=32,4096 --reps 2 --metric bw_mbps over run-local.sh write-bw
    // (every metric kept in its JSON), against ib_write_bw -a.
    let (code, out, err) = compare(&[
        "sweep-wbw.json",
        "perftest-write-bw-a.txt",
        "--metric",
        "bw_mbps",
        "--label",
        "ours-sweep",
        "--label",
        "perftest",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 23, "{out}");
    assert_eq!(
        lines[..3].join("\n"),
        "\
op     size     postlist  ours-sweep [MB/s]  perftest [MB/s]  perftest/ours-sweep
WRITE  32       1         0.7423             0.3400           0.458
WRITE  4096     1         47.68              40.05            0.840"
    );
    assert_eq!(
        lines[3],
        "WRITE  2        1         –                  0.02000          –"
    );
    // The sweep kept the rate as well.
    let (_, out, _) = compare(&["sweep-wbw.json", "--metric", "mops"]);
    assert_eq!(
        out,
        "op     size  sweep-wbw [Mops]\nWRITE  32    0.02432\nWRITE  4096  0.01221\n"
    );
}

/// The original C suite's logs (recorded by vs-original.sh in one testbed boot, with the GID
/// patch; ANSI colour codes and all) against ours from the same boot, and perftest: the
/// original's `main: Server 0: … IOPS` lines are ops/s, read as Mops, and its `# …` flags line
/// gives the point its shape.
#[test]
fn the_original_suites_logs_against_ours_and_perftest() {
    let pairs = [
        (
            "write-32-pl1",
            "WRITE  32    1         1        0.02587      0.02370          0.916",
        ),
        (
            "write-32-pl16",
            "WRITE  32    16        1        0.03916      0.03481          0.889",
        ),
        (
            "read-32-pl1",
            "READ   32    1         1        0.007299     0.009038         1.238",
        ),
        (
            "read-32-pl16",
            "READ   32    16        1        0.01854      0.01686          0.909",
        ),
    ];
    for (point, row) in pairs {
        let ours = format!("ours-rw-tput-sender-{point}.json");
        let orig = format!("original-rw-tput-sender-{point}.log");
        let (code, out, err) = compare(&[&ours, &orig, "--label", "ours", "--label", "original"]);
        assert_eq!(code, Some(0), "{err}");
        let mut lines = out.lines();
        let header = lines.next().unwrap_or_default();
        assert!(
            header.starts_with("op ")
                && header.ends_with("ours [Mops]  original [Mops]  original/ours"),
            "{out}"
        );
        // Column widths follow the longest cell; compare the cells.
        let cells = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            cells(lines.next().unwrap_or_default()),
            cells(row),
            "{point}:\n{out}"
        );
        assert_eq!(lines.next(), None, "{out}");
    }
    let (code, out, err) = compare(&[
        "ours-rw-tput-sender-write-32-pl1.txt",
        "original-rw-tput-sender-write-32-pl1.log",
        "perftest-write-bw-s32.txt",
        "--label",
        "ours",
        "--label",
        "original",
        "--label",
        "perftest",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "\
op     size  postlist  ours [Mops]  original [Mops]  perftest [Mops]  original/ours  perftest/ours
WRITE  32    1         0.02590      0.02370          0.02770          0.915          1.070
"
    );
}
