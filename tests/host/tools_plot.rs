//! `rdma-bench plot` on the recorded inputs under tests/data/plot/ (host-only): the SVG is parsed
//! with a real XML parser and its series, legend, axes and error bars are counted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rdma_bench::tools::plot::chart::{self, Chart, Choice, ErrSpan, Kind};
use rdma_bench::tools::plot::{draw, input};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/plot")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tools_plot");
    std::fs::create_dir_all(&d).expect("create tmp dir");
    d.join(name)
}

fn plot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rdma-bench"))
        .arg("plot")
        .args(args)
        .output()
        .expect("run rdma-bench plot")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs plot and returns the SVG it wrote.
fn plot_ok(files: &[&str], out: &str, extra: &[&str]) -> String {
    let out = tmp(out);
    let mut args: Vec<String> = files.iter().map(|f| s(&data(f)).to_string()).collect();
    args.extend(["-o".to_string(), s(&out).to_string()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = plot(&argv);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "plot {argv:?} failed: {stderr}");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("wrote "));
    std::fs::read_to_string(&out).expect("read the SVG")
}

fn hex(i: usize) -> String {
    let c = draw::color(i);
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// Elements `tag` whose `attr` is series `i`'s colour.
fn count(doc: &roxmltree::Document, tag: &str, attr: &str, i: usize) -> usize {
    let want = hex(i);
    doc.descendants()
        .filter(|n| n.has_tag_name(tag))
        .filter(|n| {
            n.attribute(attr)
                .is_some_and(|v| v.eq_ignore_ascii_case(&want))
        })
        .count()
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    let doc = roxmltree::Document::parse(svg).expect("the output is well-formed XML");
    assert!(doc.root_element().has_tag_name("svg"), "root is <svg>");
    doc
}

#[test]
fn three_sweeps_overlay_as_rate_vs_size_with_error_bars() {
    let svg = plot_ok(
        &["ours-size.json", "perftest-size.json", "c-suite-size.json"],
        "overlay.svg",
        &[],
    );
    let doc = parse(&svg);
    for i in 0..3 {
        // The series' line and its legend sample.
        assert_eq!(count(&doc, "polyline", "stroke", i), 2, "series {i}");
        assert_eq!(count(&doc, "circle", "fill", i), 8, "markers of series {i}");
    }
    // 3 reps: one bar (3 lines) per point; the C suite's sweep has 1 rep: none.
    assert_eq!(count(&doc, "line", "stroke", 0), 8 * 3);
    assert_eq!(count(&doc, "line", "stroke", 1), 8 * 3);
    assert_eq!(count(&doc, "line", "stroke", 2), 0);
    let t = texts(&doc);
    for want in [
        "ours",
        "perftest",
        "c-suite-size",
        "size (bytes)",
        "Rate (Mops)",
    ] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
    // log2 x axis: the ticks are powers of two written as sizes.
    for tick in ["32", "256", "1K", "4K"] {
        assert!(t.iter().any(|x| x == tick), "x tick {tick} in {t:?}");
    }
    assert!(t
        .iter()
        .any(|x| x == "Rate vs size: ours vs perftest vs c-suite-size"));
}

/// Recorded on the Soft-RoCE testbed (qemu TCG guest): `rdma-bench write-bw -s SIZE -n 5000`,
/// 3 repetitions per size in alternating order, the client's `--out_json` MsgRate/BW_average.
#[test]
fn recorded_soft_roce_sweep_plots_rate_and_bandwidth() {
    let svg = plot_ok(&["recorded-write-bw.json"], "recorded.svg", &[]);
    let doc = parse(&svg);
    assert_eq!(count(&doc, "polyline", "stroke", 0), 2);
    assert_eq!(count(&doc, "circle", "fill", 0), 6);
    assert_eq!(count(&doc, "line", "stroke", 0), 6 * 3);
    let t = texts(&doc);
    for want in ["ours (Soft-RoCE)", "64", "16K", "64K", "Rate (Mops)"] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
    let svg = plot_ok(
        &["recorded-write-bw.json"],
        "recorded-bw.svg",
        &["--metric", "bw_mbps"],
    );
    assert!(texts(&parse(&svg)).iter().any(|x| x == "Bandwidth (MB/s)"));
}

#[test]
fn sweep_csv_reads_as_its_json_and_draws_the_same_svg() {
    let j = input::read(&data("ours-size.json"), None).expect("json");
    let c = input::read(&data("ours-size.csv"), None).expect("csv");
    let (input::Input::Sweeps(j), input::Input::Sweeps(c)) = (j, c) else {
        panic!("both are sweeps");
    };
    assert_eq!(j[0].points, c[0].points);
    assert_eq!((j[0].label.as_str(), c[0].label.as_str()), ("ours", "ours"));
    assert_eq!(j[0].points.len(), 8);
    let a = plot_ok(&["ours-size.json"], "from-json.svg", &[]);
    let b = plot_ok(&["ours-size.csv"], "from-csv.svg", &[]);
    assert_eq!(a, b);
}

#[test]
fn other_params_make_one_series_each_on_a_linear_scaling_axis() {
    let svg = plot_ok(&["scaling.csv"], "scaling.svg", &["--x", "threads"]);
    let doc = parse(&svg);
    assert_eq!(count(&doc, "polyline", "stroke", 0), 2);
    assert_eq!(count(&doc, "polyline", "stroke", 1), 2);
    assert_eq!(count(&doc, "polyline", "stroke", 2), 0);
    assert_eq!(count(&doc, "line", "stroke", 0), 4 * 3);
    let t = texts(&doc);
    for want in [
        "ours size=32",
        "ours size=256",
        "threads",
        "Rate (Mops)",
        "8",
    ] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
    let c = Choice {
        x: Some("threads".into()),
        ..choice()
    };
    let Chart::Lines(l) = build(&["scaling.csv"], c) else {
        panic!("lines")
    };
    assert_eq!((l.kind, l.log_x), (Kind::Scaling, false));
    let xs: Vec<f64> = l.series[0].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, [1.0, 2.0, 4.0, 8.0]);
    // Without --x, `size` wins: one series per thread count, log2 x.
    let Chart::Lines(l) = build(&["scaling.csv"], choice()) else {
        panic!("lines")
    };
    let labels: Vec<&str> = l.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "ours threads=1",
            "ours threads=2",
            "ours threads=4",
            "ours threads=8"
        ]
    );
    assert_eq!(
        (l.kind, l.log_x, l.x_label.as_str()),
        (Kind::Rate, true, "size (bytes)")
    );
}

#[test]
fn latency_sweep_draws_one_line_per_percentile() {
    let svg = plot_ok(&["latency.json"], "latency.svg", &[]);
    let doc = parse(&svg);
    for i in 0..3 {
        assert_eq!(count(&doc, "polyline", "stroke", i), 2, "percentile {i}");
        // One repetition: no error bars.
        assert_eq!(count(&doc, "line", "stroke", i), 0);
    }
    assert_eq!(count(&doc, "polyline", "stroke", 3), 0);
    let t = texts(&doc);
    for want in ["ours median", "ours p99", "ours p99.9", "Latency (us)"] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
    // Two files: one line per percentile per file.
    let svg = plot_ok(
        &["latency.json", "latency.json"],
        "latency2.svg",
        &["--label", "before", "--label", "after"],
    );
    let doc = parse(&svg);
    for i in 0..6 {
        assert_eq!(count(&doc, "polyline", "stroke", i), 2, "series {i}");
    }
    let t = texts(&doc);
    for want in ["before median", "before p99.9", "after median", "after p99"] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
}

#[test]
fn without_output_the_chart_lands_beside_the_first_file() {
    let dir = tmp("default-out");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let src = dir.join("results.csv");
    std::fs::copy(data("results.csv"), &src).expect("copy");
    let svg = dir.join("results.svg");
    let _ = std::fs::remove_file(&svg);
    let o = plot(&[s(&src)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(said.trim(), format!("wrote {} (1 series)", svg.display()));
    let body = std::fs::read_to_string(&svg).expect("results.svg written");
    assert_eq!(count(&parse(&body), "rect", "fill", 0), 5);
}

#[test]
fn results_csv_draws_bars_of_mops_per_row() {
    let svg = plot_ok(&["results.csv"], "suite.svg", &[]);
    let doc = parse(&svg);
    // 4 rows have Mops (the latency row has none), plus the legend's swatch.
    assert_eq!(count(&doc, "rect", "fill", 0), 4 + 1);
    let t = texts(&doc);
    for want in [
        "rw-tput-sender server write 32/16",
        "ud-sender server send 32/16",
        "herd client get 32",
        "2.41",
        "Mops",
        "results",
    ] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
    assert!(!t.iter().any(|x| x.starts_with("rw-postlist-latency")));

    let two = plot_ok(
        &["results.csv", "results.csv"],
        "suite2.svg",
        &["--label", "ours", "--label", "C suite"],
    );
    let doc = parse(&two);
    assert_eq!(count(&doc, "rect", "fill", 0), 5);
    assert_eq!(count(&doc, "rect", "fill", 1), 5);
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "C suite") && t.iter().any(|x| x == "ours"));
}

fn choice() -> Choice {
    Choice {
        kind: Kind::Auto,
        x: None,
        metrics: vec![],
        err: ErrSpan::Minmax,
        log_x: None,
        title: None,
    }
}

fn build(files: &[&str], c: Choice) -> Chart {
    let inputs = files
        .iter()
        .map(|f| input::read(&data(f), None).expect("read"))
        .collect();
    chart::build(inputs, &c).expect("build")
}

#[test]
fn error_bars_span_min_max_or_the_confidence_interval() {
    let Chart::Lines(mm) = build(&["ours-size.json"], choice()) else {
        panic!()
    };
    let p = &mm.series[0].points[0];
    assert_eq!((p.x, p.y, p.err), (32.0, 1.9394, Some((1.8812, 1.9782))));
    let Chart::Lines(ci) = build(
        &["ours-size.json"],
        Choice {
            err: ErrSpan::Ci,
            ..choice()
        },
    ) else {
        panic!()
    };
    assert_eq!(ci.series[0].points[0].err, Some((1.811642, 2.054224)));
    let svg = plot_ok(&["ours-size.json"], "noerr.svg", &["--err", "none"]);
    assert_eq!(count(&parse(&svg), "line", "stroke", 0), 0);
}

#[test]
fn metric_and_axis_flags_choose_what_is_drawn() {
    let c = Choice {
        metrics: vec!["bw_mbps".into()],
        log_x: Some(false),
        ..choice()
    };
    let Chart::Lines(l) = build(&["ours-size.json", "perftest-size.json"], c) else {
        panic!()
    };
    assert_eq!((l.y_label.as_str(), l.log_x), ("Bandwidth (MB/s)", false));
    assert_eq!(l.series.len(), 2);
    assert_eq!(l.series[1].points[7].y, 1556.48);
    let c = Choice {
        metrics: vec!["lat_p99_us".into(), "lat_max_us".into()],
        ..choice()
    };
    let Chart::Lines(l) = build(&["latency.json"], c) else {
        panic!()
    };
    let labels: Vec<&str> = l.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["ours p99", "ours max"]);
    let svg = plot_ok(
        &["ours-size.json"],
        "titled.svg",
        &["--title", "WRITE rate", "--log-x"],
    );
    assert!(texts(&parse(&svg)).iter().any(|t| t == "WRITE rate"));
}

/// Bad input: one line on stderr, exit 2.
fn refused(args: &[&str], env_path: Option<&str>, want: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rdma-bench"));
    cmd.arg("plot").args(args);
    if let Some(p) = env_path {
        cmd.env("PATH", p);
    }
    let o = cmd.output().expect("run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(want), "{args:?}: {err:?} lacks {want:?}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let ours = data("ours-size.json");
    let ours = s(&ours);
    let out = tmp("bad.svg");
    let out = s(&out);
    refused(
        &["/nonexistent/x.json", "-o", out],
        None,
        "cannot read /nonexistent/x.json",
    );
    refused(
        &[ours, "-o", out, "--metric", "iops"],
        None,
        "unknown metric `iops`",
    );
    refused(
        &[ours, "-o", out, "--x", "threads"],
        None,
        "x param `threads` is not in ours",
    );
    refused(
        &[ours, "-o", out, "--metric", "lat_p99_us"],
        None,
        "no points",
    );
    refused(
        &[ours, "-o", s(&tmp("x.pdf"))],
        None,
        "must end in .svg or .png",
    );
    let empty = tmp("empty.json");
    std::fs::write(
        &empty,
        r#"{"label":"e","params":["size"],"metric":"mops","points":[]}"#,
    )
    .expect("write");
    refused(&[s(&empty), "-o", out], None, "no points");
    let dup = tmp("dup.json");
    let point = r#"{"params":{"size":8},"metrics":{"mops":{"unit":"Mops","n":1,"median":1,"min":1,"max":1}}}"#;
    std::fs::write(
        &dup,
        format!(r#"{{"label":"d","params":["size"],"points":[{point},{point}]}}"#),
    )
    .expect("write");
    refused(&[s(&dup), "-o", out], None, "d: two points at size = 8");
    let res = data("results.csv");
    refused(&[s(&res), ours, "-o", out], None, "cannot share one chart");
    let nobin = tmp("nobin");
    std::fs::create_dir_all(&nobin).expect("mkdir");
    refused(
        &[ours, "-o", s(&tmp("x.png"))],
        Some(s(&nobin)),
        "needs rsvg-convert",
    );
}

#[test]
fn png_output_goes_through_rsvg_convert() {
    // A stand-in rsvg-convert that copies its stdin to --output: checks the contract (SVG on
    // stdin, `--format png --output OUT`), not librsvg itself.
    let bin = tmp("fakebin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let fake = bin.join("rsvg-convert");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1 $2 $3\" = '--format png --output' ] || exit 9\ncat > \"$4\"\n",
    )
    .expect("write");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let png = tmp("chart.png");
    let _ = std::fs::remove_file(&png);
    let o = Command::new(env!("CARGO_BIN_EXE_rdma-bench"))
        .args(["plot", s(&data("ours-size.json")), "-o", s(&png)])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let body = std::fs::read_to_string(&png).expect("the converter wrote OUT");
    parse(&body);
}

#[test]
fn help_explains_inputs_kinds_and_examples() {
    let o = plot(&["--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    for want in [
        "results.csv",
        "--kind",
        "--err",
        "log2",
        "Examples:",
        "rsvg-convert",
    ] {
        assert!(h.contains(want), "--help lacks {want:?}");
    }
}

#[test]
fn a_runs_output_draws_one_bar_per_point() {
    let ours = plot_ok(
        &["../compare/ours-rw-tput-sender-write-32-pl16.json"],
        "run.svg",
        &[],
    );
    let t = texts(&parse(&ours));
    for want in ["rw-tput-sender WRITE 32/16 x1", "0.0392", "Mops"] {
        assert!(t.iter().any(|x| x == want), "text {want:?} in {t:?}");
    }
    let perftest = plot_ok(&["../compare/perftest-write-bw-s32.json"], "pt.svg", &[]);
    let doc = parse(&perftest);
    assert_eq!(count(&doc, "rect", "fill", 0), 1 + 1);
    let t = texts(&doc);
    assert!(t.iter().any(|x| x == "ib_write_bw WRITE 32/1"), "{t:?}");
    // Latency only: no rate to draw as a bar.
    let lat = plot(&[
        s(&data("../compare/ours-write-lat-s8.txt")),
        "-o",
        s(&tmp("lat.svg")),
    ]);
    assert_eq!(lat.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&lat.stderr).contains("no rate (Mops) in it"),
        "{}",
        String::from_utf8_lossy(&lat.stderr)
    );
}

/// Points and bars whose runs' counters moved are marked `?`, with a legend entry saying why;
/// clean inputs get neither.
#[test]
fn questionable_points_and_bars_are_marked() {
    let legend = "? questionable: the fabric's counters moved (retransmissions, RNR, link)";
    let mut sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("ours-size.json")).unwrap()).unwrap();
    sweep["points"][1]["untrusted"] = serde_json::json!(2);
    let file = tmp("lossy-size.json");
    std::fs::write(&file, sweep.to_string()).unwrap();
    let svg = plot_ok(&[s(&file)], "lossy.svg", &["--metric", "mops"]);
    let t = texts(&parse(&svg));
    assert_eq!(t.iter().filter(|x| *x == "?").count(), 1, "{t:?}");
    assert!(t.iter().any(|x| x == legend), "{t:?}");
    let clean = plot_ok(&["ours-size.json"], "clean.svg", &["--metric", "mops"]);
    assert!(!texts(&parse(&clean))
        .iter()
        .any(|x| x == "?" || x == legend));

    let csv = tmp("results-lossy.csv");
    std::fs::write(
        &csv,
        "bench,role,op,size,postlist,mops,lat_avg_us,lat_median_us,lat_p99_us,flags,trusted\n\
         rw-tput-sender,server,WRITE,32,1,2.5,,,,,1\n\
         rw-tput-sender,server,READ,32,1,1.5,,,,,0\n",
    )
    .unwrap();
    let t = texts(&parse(&plot_ok(&[s(&csv)], "lossy-bars.svg", &[])));
    assert!(
        t.iter().any(|x| x == "2.5") && t.iter().any(|x| x == "1.5?"),
        "{t:?}"
    );
    assert!(t.iter().any(|x| x == legend), "{t:?}");
}

#[test]
fn one_sweeps_csv_and_json_together_get_two_legend_entries() {
    // Both files say their label is "ours": each entry names its file, so neither hides.
    let svg = plot_ok(
        &["ours-size.csv", "ours-size.json"],
        "csv-and-json.svg",
        &[],
    );
    let t = texts(&parse(&svg));
    assert!(t.iter().any(|x| x == "ours (ours-size.csv)"), "{t:?}");
    assert!(t.iter().any(|x| x == "ours (ours-size.json)"), "{t:?}");
    // A label the user gives is kept as given.
    let svg = plot_ok(
        &["ours-size.csv", "ours-size.json"],
        "csv-and-json-labelled.svg",
        &["--label", "first", "--label", "second"],
    );
    let t = texts(&parse(&svg));
    assert!(
        t.iter().any(|x| x == "first") && t.iter().any(|x| x == "second"),
        "{t:?}"
    );
}
