//! `rdma-bench compare`: results of ours, perftest and the original C suite side by side, points
//! matched by operation and shape, with each file's ratio to the first.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::tools::results::{self, Key, Metric, Point};
use crate::tools::sweep::num;

const AFTER_HELP: &str = "\
Each FILE is read in whatever format it is: our benchmarks' output (--json lines or text summary,
also with run-local.sh's [server]/[client] prefixes), perftest's table or --out_json file (ours and
perftest 4.5's), the original C suite's log (its lines carry no flags: a `# rw-tput-sender --size 32
--postlist 4 --do-read 0` line in the log tells them), or a sweep's PREFIX.csv / PREFIX.json
(their medians).

Points are matched by operation (WRITE, READ, SEND, …), size, postlist and threads, each where
both files know it: our `rw-tput-sender --do-read 0` WRITE meets perftest's ib_write_bw WRITE and the
original's rw-tput-sender. A file that says nothing of its shape (a text summary) matches the
first row. A point missing from a file shows –.

A value marked `?` is questionable: the fabric's counters moved during its run (retransmissions,
RNR, link or fatal errors; the run's `counters` line says which), so its ratios are marked too; the
JSON has `trusted` per value (null where the file does not say).

Ratios: each file against the FIRST. For rates (mops, bw_mbps) the ratio is file / first; for
latencies (lat_*), where lower is better, it is first / file, so that a ratio above 1 always means
the file did better than the first, and --fail-below means the same for every metric. The ratio
columns are named as they divide: ours/perftest for a rate, perftest/ours for a latency.

Exit codes: 0 the table (and the gate passed); 6 a ratio is below --fail-below (the table is
printed first); 2 the input cannot be compared (bad flags, unreadable files, no results, or with
--fail-below no point of a file matched one of the first's, so nothing could be gated).

Examples:
  rdma-bench compare target/sw.json perftest-write-bw.json --label ours --label perftest
  rdma-bench compare perftest.txt ours.txt --metric lat_median_us --fail-below 0.9";

/// `rdma-bench compare`'s flags.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP)]
pub struct CompareArgs {
    /// Result files; the first is the reference of the ratios
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<String>,
    /// Column header of the i-th file (repeat per file, in order) [default: its file name]
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// The compared value: mops, bw_mbps, lat_avg_us, lat_median_us, lat_p99_us, lat_p999_us,
    /// lat_min_us, lat_max_us [default: mops when the first file has it, else its first metric]
    #[arg(long)]
    pub metric: Option<String>,
    /// Exit 6 when a ratio (better = above 1, see below) is under RATIO
    #[arg(long, value_name = "RATIO")]
    pub fail_below: Option<f64>,
    /// Print the comparison as JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

/// One row: a shape of run and each file's value.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What the row is (the fields any matched file knows).
    pub key: Key,
    /// Per file, its value (None: no such point there).
    pub values: Vec<Option<f64>>,
    /// Per file, whether its run's counters vouch for the value (None: the file does not say).
    pub trusted: Vec<Option<bool>>,
}

impl Row {
    /// File `i`'s ratio to the first, the better the higher (None when either is missing or
    /// the divisor is 0).
    pub fn ratio(&self, i: usize, metric: Metric) -> Option<f64> {
        let (a, b) = (
            self.values.first().copied().flatten()?,
            self.values.get(i).copied().flatten()?,
        );
        let (num, den) = if metric.lower_is_better() {
            (a, b)
        } else {
            (b, a)
        };
        (den != 0.0).then(|| num / den)
    }

    /// True when file `i`'s value, or (for a ratio) the first file's, is questionable.
    fn questionable(&self, i: usize) -> bool {
        let bad = |j: usize| self.trusted.get(j).copied().flatten() == Some(false);
        bad(i) || (i > 0 && bad(0))
    }
}

fn merge_key(into: &mut Key, k: &Key) {
    into.op = into.op.take().or_else(|| k.op.clone());
    into.size = into.size.or(k.size);
    into.postlist = into.postlist.or(k.postlist);
    into.threads = into.threads.or(k.threads);
}

/// The rows: the first file's points in order, then the points of later files that matched no
/// row. A file's point fills the first row whose known fields it agrees with.
pub fn match_points(files: &[Vec<Point>], metric: Metric) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for (i, points) in files.iter().enumerate() {
        for p in points {
            let Some(v) = p.metrics.get(metric) else {
                continue;
            };
            match rows
                .iter_mut()
                .find(|r| r.values[i].is_none() && r.key.matches(&p.key))
            {
                Some(r) => {
                    r.values[i] = Some(v);
                    r.trusted[i] = p.trusted;
                    merge_key(&mut r.key, &p.key);
                }
                None => {
                    let mut values = vec![None; files.len()];
                    let mut trusted = vec![None; files.len()];
                    values[i] = Some(v);
                    trusted[i] = p.trusted;
                    rows.push(Row {
                        key: p.key.clone(),
                        values,
                        trusted,
                    });
                }
            }
        }
    }
    rows
}

/// Values for the table: four significant digits (rates on the testbed go down to 10^-5 Mops),
/// whole numbers from 1000 up.
fn cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v == 0.0 || !v.is_finite() => format!("{v}"),
        Some(v) => {
            let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
            format!("{v:.decimals$}")
        }
        None => "–".into(),
    }
}

/// The side-by-side table.
pub fn table(labels: &[String], metric: Metric, rows: &[Row]) -> String {
    let has = |f: fn(&Key) -> bool| rows.iter().any(|r| f(&r.key));
    let cols = [
        has(|k| k.op.is_some()),
        has(|k| k.size.is_some()),
        has(|k| k.postlist.is_some()),
        has(|k| k.threads.is_some()),
    ];
    let mut head: Vec<String> = ["op", "size", "postlist", "threads"]
        .iter()
        .zip(cols)
        .filter(|(_, on)| *on)
        .map(|(h, _)| h.to_string())
        .collect();
    head.extend(labels.iter().map(|l| format!("{l} [{}]", metric.unit())));
    head.extend((1..labels.len()).map(|i| ratio_name(labels, i, metric)));
    let mut out = vec![head];
    for r in rows {
        let text = |v: Option<u64>| v.map_or("–".to_string(), |x| x.to_string());
        let key = [
            r.key.op.clone().unwrap_or_else(|| "–".into()),
            text(r.key.size),
            text(r.key.postlist),
            text(r.key.threads),
        ];
        let mut line: Vec<String> = key
            .into_iter()
            .zip(cols)
            .filter(|(_, on)| *on)
            .map(|(k, _)| k)
            .collect();
        let mark = |i: usize| if r.questionable(i) { "?" } else { "" };
        line.extend(r.values.iter().enumerate().map(|(i, v)| match v {
            Some(_) => format!("{}{}", cell(*v), mark(i)),
            None => cell(None),
        }));
        line.extend((1..labels.len()).map(|i| {
            r.ratio(i, metric)
                .map_or("–".to_string(), |x| format!("{x:.3}{}", mark(i)))
        }));
        out.push(line);
    }
    let mut text = crate::tools::sweep::align(&out);
    if rows
        .iter()
        .any(|r| (0..labels.len()).any(|i| r.questionable(i)))
    {
        text.push_str(QUESTIONABLE_LEGEND);
    }
    text
}

/// Under a table with `?` marks.
const QUESTIONABLE_LEGEND: &str = "? questionable: the fabric's counters moved during that \
run (retransmissions, RNR, link or fatal errors; its counters line says which)\n";

/// Six decimals, as the sweep's files.
fn round6(x: f64) -> f64 {
    num(x).parse().unwrap_or(x)
}

/// The comparison as JSON.
pub fn json_doc(labels: &[String], metric: Metric, rows: &[Row]) -> String {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"op": r.key.op, "size": r.key.size, "postlist": r.key.postlist,
                "threads": r.key.threads,
                "values": r.values.iter().map(|v| v.map(round6)).collect::<Vec<_>>(),
                "trusted": r.trusted,
                "ratios": (1..labels.len()).map(|i| r.ratio(i, metric).map(round6)).collect::<Vec<_>>()})
        })
        .collect();
    json!({"metric": metric.name(), "unit": metric.unit(),
        "lower_is_better": metric.lower_is_better(), "files": labels, "rows": rows})
    .to_string()
}

fn describe(k: &Key) -> String {
    let mut parts = Vec::new();
    if let Some(op) = &k.op {
        parts.push(op.clone());
    }
    if let Some(s) = k.size {
        parts.push(format!("size {s}"));
    }
    if let Some(p) = k.postlist {
        parts.push(format!("postlist {p}"));
    }
    if let Some(t) = k.threads {
        parts.push(format!("threads {t}"));
    }
    if parts.is_empty() {
        "the only point".into()
    } else {
        parts.join(", ")
    }
}

/// What file `i`'s ratio divides, as its column says it: `file/first` for rates, `first/file`
/// for latencies (lower is better, so the ratio is inverted to read "above 1 is better").
fn ratio_name(labels: &[String], i: usize, metric: Metric) -> String {
    if metric.lower_is_better() {
        format!("{}/{}", labels[0], labels[i])
    } else {
        format!("{}/{}", labels[i], labels[0])
    }
}

/// The first ratio under `limit`, as the one line that says so.
pub fn first_below(labels: &[String], metric: Metric, rows: &[Row], limit: f64) -> Option<String> {
    let mut below = rows.iter().flat_map(|r| {
        (1..labels.len()).filter_map(move |i| {
            let x = r.ratio(i, metric)?;
            (x < limit).then_some((r, i, x))
        })
    });
    let (r, i, x) = below.next()?;
    let more = below.count();
    Some(format!(
        "{} = {x:.3}{} at {} is below --fail-below {limit}{}",
        ratio_name(labels, i, metric),
        if r.questionable(i) {
            " (questionable: the fabric's counters moved)"
        } else {
            ""
        },
        describe(&r.key),
        if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        }
    ))
}

/// Runs `rdma-bench compare`. Input it cannot compare is a usage error (exit 2, as `plot` and
/// `history` say it); a ratio under `--fail-below` is a finding (exit 6).
pub fn run(a: CompareArgs) -> Result<()> {
    if a.labels.len() > a.files.len() {
        return Err(Error::usage(format!(
            "{} --label for {} files",
            a.labels.len(),
            a.files.len()
        )));
    }
    if let Some(r) = a.fail_below {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::usage(
                "--fail-below must be a positive ratio, e.g. 0.9",
            ));
        }
    }
    let files = a
        .files
        .iter()
        .map(|f| results::read_points(f).map_err(|e| Error::usage(e.to_string())))
        .collect::<Result<Vec<_>>>()?;
    let labels: Vec<String> = a
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            a.labels.get(i).cloned().unwrap_or_else(|| {
                std::path::Path::new(f)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| f.clone())
            })
        })
        .collect();
    for (f, pts) in a.files.iter().zip(&files) {
        if pts.is_empty() {
            return Err(Error::usage(format!("{f}: no results found in it")));
        }
    }
    let metric = match &a.metric {
        Some(m) => Metric::parse(m).ok_or_else(|| {
            Error::usage(format!(
                "--metric {m}: not a metric (one of {})",
                Metric::names()
            ))
        })?,
        None => files[0]
            .iter()
            .find_map(|p| p.metrics.default_metric())
            .unwrap_or(Metric::Mops),
    };
    let rows = match_points(&files, metric);
    if a.json {
        println!("{}", json_doc(&labels, metric, &rows));
    } else {
        print!("{}", table(&labels, metric, &rows));
    }
    if let Some(limit) = a.fail_below {
        // A gate with nothing to compare would pass whatever the files hold.
        for (i, label) in labels.iter().enumerate().skip(1) {
            if !rows.iter().any(|r| r.ratio(i, metric).is_some()) {
                return Err(Error::usage(format!(
                    "--fail-below {limit}: no {metric} of {label} matched a point of {} (by \
                     operation, size, postlist and threads): nothing to gate on",
                    labels[0],
                    metric = metric.name()
                )));
            }
        }
        if let Some(line) = first_below(&labels, metric, &rows, limit) {
            return Err(Error::Finding(line));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::results::{parse, points};

    #[test]
    fn the_originals_log_meets_our_json_and_perftests_table() {
        // The original's lines in their documented format (rw-tput-sender prints IOPS per
        // thread; its command line, as a comment, says what ran).
        let original = "# ./rw-tput-sender --size 32 --postlist 4 --do-read 0 --num-threads 1\n\
                        main: Server 0: 2000000.00 IOPS\n\
                        main: Server 0: 2200000.00 IOPS\n\
                        main: Server 0: 2100000.00 IOPS\n";
        let ours = r#"{"bench":"rw-tput-sender","role":"server","op":"WRITE","size":32,"postlist":4,"summary":true,"ok":true,"threads":1,"mops":2.31}
{"bench":"rw-tput-sender","role":"server","op":"READ","size":32,"postlist":4,"summary":true,"ok":true,"threads":1,"mops":1.5}"#;
        let perftest = " RDMA_Write Post List BW Test\n Post List       : 4\n\
             #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n \
             32         5000             0.60               0.50   \t\t   1.953125\n\
             ---------------------------------------------------------------------------------------\n";
        let files = [
            points(&parse(original)),
            points(&parse(ours)),
            points(&parse(perftest)),
        ];
        let rows = match_points(&files, Metric::Mops);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].values, [Some(2.1), Some(2.31), Some(1.953125)]);
        assert!((rows[0].ratio(1, Metric::Mops).unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(rows[1].key.op.as_deref(), Some("READ"));
        assert_eq!(rows[1].values, [None, Some(1.5), None]);
        let labels = ["original".to_string(), "ours".into(), "perftest".into()];
        assert_eq!(
            table(&labels, Metric::Mops, &rows),
            "\
op     size  postlist  threads  original [Mops]  ours [Mops]  perftest [Mops]  ours/original  perftest/original
WRITE  32    4         1        2.100            2.310        1.953            1.100          0.930
READ   32    4         1        –                1.500        –                –              –
"
        );
        assert_eq!(
            first_below(&labels, Metric::Mops, &rows, 0.95).as_deref(),
            Some(
                "perftest/original = 0.930 at WRITE, size 32, postlist 4, threads 1 is below \
                 --fail-below 0.95"
            )
        );
        // Gb/s (10^9 bits) become MB/s (2^20 bytes).
        let bw = match_points(&files[2..], Metric::BwMbps);
        assert!((bw[0].values[0].unwrap() - 0.5e9 / 8.0 / 1048576.0).abs() < 1e-9);
    }

    #[test]
    fn a_questionable_run_is_marked_with_its_ratios() {
        let clean = r#"{"bench":"rw-tput-sender","role":"server","op":"WRITE","size":32,"postlist":1,"summary":true,"ok":true,"threads":1,"mops":2.0,"trusted":true}"#;
        let lossy = r#"{"bench":"rw-tput-sender","role":"server","op":"WRITE","size":32,"postlist":1,"summary":true,"ok":true,"threads":1,"mops":1.0,"trusted":false}"#;
        let files = [points(&parse(clean)), points(&parse(lossy))];
        let rows = match_points(&files, Metric::Mops);
        assert_eq!(rows[0].trusted, [Some(true), Some(false)]);
        let labels = ["clean".to_string(), "lossy".into()];
        let t = table(&labels, Metric::Mops, &rows);
        assert_eq!(
            t,
            format!(
                "\
op     size  postlist  threads  clean [Mops]  lossy [Mops]  lossy/clean
WRITE  32    1         1        2.000         1.000?        0.500?
{QUESTIONABLE_LEGEND}"
            )
        );
        let j: Value = serde_json::from_str(&json_doc(&labels, Metric::Mops, &rows)).unwrap();
        assert_eq!(j["rows"][0]["trusted"], json!([true, false]));
        assert!(first_below(&labels, Metric::Mops, &rows, 0.9)
            .unwrap()
            .contains("0.500 (questionable: the fabric's counters moved) at WRITE"));
        // Files that say nothing of it are not marked.
        let rows = match_points(
            &[points(&parse(
                clean.replace(",\"trusted\":true", "").as_str(),
            ))],
            Metric::Mops,
        );
        assert_eq!(rows[0].trusted, [None]);
        assert!(!table(&labels[..1], Metric::Mops, &rows).contains('?'));
    }
}
