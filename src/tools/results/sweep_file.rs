//! A sweep's own files (`PREFIX.csv`, long form, and `PREFIX.json`) and the suite's
//! `results.csv`: the one reader of them. `rdma-bench plot` draws the full statistics
//! ([`Sweep`], [`SuiteRow`]); compare and the rest take each sweep point's medians as a
//! [`Point`] ([`points_of_csv`], [`points_of_json`]).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Facts, Key, Metric, Metrics, Point, Source};

/// One metric's statistics over the repetitions of a point.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    /// Unit as written by the sweep ("Mops", "MB/s", "us").
    pub unit: String,
    /// Number of repetitions behind the statistics.
    pub n: u32,
    /// Median of the repetitions: the value that is plotted.
    pub median: f64,
    /// Smallest repetition.
    pub min: f64,
    /// Largest repetition.
    pub max: f64,
    /// 95 % confidence interval, when the sweep could compute one.
    pub ci95: Option<(f64, f64)>,
}

/// One point of a sweep: its parameter values and its metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Parameter name → value as written (numbers keep their text form, e.g. "4096").
    pub params: BTreeMap<String, String>,
    /// Metric name → statistics.
    pub metrics: BTreeMap<String, Stat>,
    /// What the JSON says of the runs behind it, when it does: their source, benchmark and
    /// operation.
    pub source: Option<String>,
    /// The benchmark.
    pub bench: Option<String>,
    /// The operation.
    pub op: Option<String>,
    /// Repetitions whose counters made them questionable (the sweep's `untrusted` field).
    pub untrusted: u32,
}

/// A sweep (from its JSON or CSV): a label, the swept parameters and the points.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The series' name in the legend.
    pub label: String,
    /// Swept parameters, in the sweep's order.
    pub params: Vec<String>,
    /// The metric the sweep was run for (JSON's `metric` field), if known.
    pub metric: Option<String>,
    /// The points, in file order.
    pub points: Vec<SweepPoint>,
}

/// One row of the suite's `results.csv` that has a Mops value.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRow {
    /// "bench role op size/postlist", the bar's label.
    pub label: String,
    /// Million operations per second.
    pub mops: f64,
    /// The run's counters made it questionable (results.csv's `trusted` is 0).
    pub questionable: bool,
}

const SUITE_HEADER: &[&str] = &["bench", "role", "op", "size", "postlist", "mops"];

/// True when `header` (split) is the suite's `results.csv`'s.
pub fn is_suite_header(header: &[String]) -> bool {
    header.len() >= SUITE_HEADER.len() && header[..SUITE_HEADER.len()] == *SUITE_HEADER
}

fn param_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn num(v: Option<&Value>, field: &str) -> Result<f64, String> {
    v.and_then(Value::as_f64)
        .ok_or_else(|| format!("metric field `{field}` missing or not a number"))
}

fn parse_stat(v: &Value) -> Result<Stat, String> {
    let ci = match (
        v.get("ci95_low").and_then(Value::as_f64),
        v.get("ci95_high").and_then(Value::as_f64),
    ) {
        (Some(l), Some(h)) => Some((l, h)),
        _ => None,
    };
    Ok(Stat {
        unit: v.get("unit").and_then(Value::as_str).unwrap_or("").into(),
        n: v.get("n").and_then(Value::as_u64).unwrap_or(1) as u32,
        median: num(v.get("median"), "median")?,
        min: num(v.get("min"), "min")?,
        max: num(v.get("max"), "max")?,
        ci95: ci,
    })
}

/// Parses a sweep's JSON; `stem` is the label when the file has none.
pub fn parse_json(text: &str, stem: &str) -> Result<Sweep, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let params = v
        .get("params")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(param_text).collect())
        .unwrap_or_default();
    let mut points = Vec::new();
    let raw = v
        .get("points")
        .and_then(Value::as_array)
        .ok_or("no `points` array (is this a sweep's JSON?)")?;
    for (i, p) in raw.iter().enumerate() {
        let pp = p
            .get("params")
            .and_then(Value::as_object)
            .ok_or(format!("point {i} has no `params` object"))?;
        let mm = p
            .get("metrics")
            .and_then(Value::as_object)
            .ok_or(format!("point {i} has no `metrics` object"))?;
        let mut metrics = BTreeMap::new();
        for (k, s) in mm {
            metrics.insert(
                k.clone(),
                parse_stat(s).map_err(|e| format!("point {i}: {k}: {e}"))?,
            );
        }
        let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        points.push(SweepPoint {
            params: pp.iter().map(|(k, v)| (k.clone(), param_text(v))).collect(),
            metrics,
            source: text("source"),
            bench: text("bench"),
            op: text("op"),
            untrusted: p.get("untrusted").and_then(Value::as_u64).unwrap_or(0) as u32,
        });
    }
    Ok(Sweep {
        label: v
            .get("label")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(stem)
            .to_string(),
        params,
        metric: v.get("metric").and_then(Value::as_str).map(str::to_string),
        points,
    })
}

/// Splits one CSV line (RFC 4180 quoting: `"a,b"` and `""` inside quotes).
pub fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn cell_f64(cells: &[String], i: usize, what: &str, line: usize) -> Result<f64, String> {
    let c = cells.get(i).map(|s| s.trim()).unwrap_or("");
    c.parse::<f64>()
        .map_err(|_| format!("line {line}: `{what}` is `{c}`, not a number"))
}

/// Parses a sweep's long-form CSV into one sweep per label (in order of first appearance).
pub fn parse_sweep_csv(text: &str, stem: &str) -> Result<Vec<Sweep>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header = lines
        .next()
        .map(|(_, l)| split_csv(l))
        .ok_or("empty file")?;
    let col = |name: &str| header.iter().position(|h| h == name);
    let (Some(0), Some(m)) = (col("label"), col("metric")) else {
        return Err(
            "not a sweep CSV (header must start with `label` and have `metric`) \
                    nor a suite results.csv (`bench,role,op,...`)"
                .into(),
        );
    };
    let params: Vec<String> = header[1..m].to_vec();
    let need = |n: &str| col(n).ok_or(format!("header has no `{n}` column"));
    let (unit, n, med, min, max) = (
        need("unit")?,
        need("n")?,
        need("median")?,
        need("min")?,
        need("max")?,
    );
    let (cil, cih, untrusted) = (col("ci95_low"), col("ci95_high"), col("untrusted"));
    let mut sweeps: Vec<Sweep> = Vec::new();
    for (ln, line) in lines {
        let ln = ln + 1;
        let c = split_csv(line);
        if c.len() < header.len() {
            return Err(format!(
                "line {ln} has {} cells, header has {}",
                c.len(),
                header.len()
            ));
        }
        let label = if c[0].is_empty() { stem } else { &c[0] };
        let opt = |i: Option<usize>| i.and_then(|i| c[i].trim().parse::<f64>().ok());
        let stat = Stat {
            unit: c[unit].clone(),
            n: c[n].trim().parse().unwrap_or(1),
            median: cell_f64(&c, med, "median", ln)?,
            min: cell_f64(&c, min, "min", ln)?,
            max: cell_f64(&c, max, "max", ln)?,
            ci95: opt(cil).zip(opt(cih)),
        };
        let pv: BTreeMap<String, String> = params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), c[1 + i].clone()))
            .collect();
        let sweep = match sweeps.iter_mut().position(|s| s.label == label) {
            Some(i) => &mut sweeps[i],
            None => {
                sweeps.push(Sweep {
                    label: label.to_string(),
                    params: params.clone(),
                    metric: None,
                    points: Vec::new(),
                });
                let last = sweeps.len() - 1;
                &mut sweeps[last]
            }
        };
        match sweep.points.iter_mut().find(|p| p.params == pv) {
            Some(p) => {
                p.metrics.insert(c[m].clone(), stat);
            }
            None => sweep.points.push(SweepPoint {
                params: pv,
                metrics: BTreeMap::from([(c[m].clone(), stat)]),
                source: None,
                bench: None,
                op: None,
                untrusted: untrusted
                    .and_then(|i| c[i].trim().parse().ok())
                    .unwrap_or(0),
            }),
        }
    }
    Ok(sweeps)
}

/// Bars with the same label (the same benchmark, role, op and shape run with other flags, or
/// two processes of one run) are told apart by the flags that differ among them, else by their
/// order: `herd client WRITE 58/1 --update-percentage 50`, `rc-swarm worker READ 32/1 #2`.
fn distinct_labels(rows: Vec<(String, String, f64, bool)>) -> Vec<SuiteRow> {
    let pairs = |flags: &str| -> Vec<String> {
        let w: Vec<&str> = flags.split_whitespace().collect();
        w.chunks(2).map(|c| c.join(" ")).collect()
    };
    let mut out = Vec::with_capacity(rows.len());
    for (i, (label, flags, mops, questionable)) in rows.iter().enumerate() {
        let same: Vec<usize> = (0..rows.len()).filter(|&j| rows[j].0 == *label).collect();
        if same.len() == 1 {
            out.push(SuiteRow {
                label: label.clone(),
                mops: *mops,
                questionable: *questionable,
            });
            continue;
        }
        let differ: Vec<String> = pairs(flags)
            .into_iter()
            .filter(|p| !same.iter().all(|&j| pairs(&rows[j].1).contains(p)))
            .collect();
        let label = if differ.is_empty() {
            let k = same.iter().position(|&j| j == i).unwrap_or(0) + 1;
            format!("{label} #{k}")
        } else {
            format!("{label} {}", differ.join(" "))
        };
        out.push(SuiteRow {
            label,
            mops: *mops,
            questionable: *questionable,
        });
    }
    out
}

/// The rows of the suite's `results.csv` after its header: (line number, cells), each with at
/// least the six leading columns.
fn suite_cells(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut rows = Vec::new();
    for (ln, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let c = split_csv(line);
        if c.len() < SUITE_HEADER.len() {
            return Err(format!(
                "line {} has {} cells, expected at least 6",
                ln + 1,
                c.len()
            ));
        }
        rows.push((ln + 1, c));
    }
    Ok(rows)
}

/// Parses the suite's `results.csv`: rows without a Mops value are left out.
pub fn parse_suite(text: &str) -> Result<Vec<SuiteRow>, String> {
    let mut rows = Vec::new();
    for (ln, c) in suite_cells(text)? {
        if c[5].trim().is_empty() {
            continue;
        }
        let mops = cell_f64(&c, 5, "mops", ln)?;
        let shape = match (c[3].trim(), c[4].trim()) {
            ("", "") => String::new(),
            (s, "") => s.to_string(),
            (s, p) => format!("{s}/{p}"),
        };
        let label = [c[0].trim(), c[1].trim(), c[2].trim(), shape.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let flags = c.get(9).map_or("", |f| f.trim()).to_string();
        // `trusted` (column 11, newer suites): 0 when the run's counters moved.
        let questionable = c.get(10).is_some_and(|t| t.trim() == "0");
        rows.push((label, flags, mops, questionable));
    }
    Ok(distinct_labels(rows))
}

/// The rows of the suite's `results.csv` as points: bench, op, size and postlist as the key, the
/// role and the other flags as parameters, Mops and the latency columns as metrics, `trusted`
/// (0/1) as the verdict. Rows without any value are left out.
pub fn points_of_suite(text: &str) -> Result<Vec<Point>, String> {
    let columns = [
        (5, Metric::Mops),
        (6, Metric::LatAvgUs),
        (7, Metric::LatMedianUs),
        (8, Metric::LatP99Us),
    ];
    let mut out = Vec::new();
    for (ln, c) in suite_cells(text)? {
        let cell = |i: usize| c.get(i).map_or("", |s| s.trim());
        let mut metrics = Metrics::default();
        for (i, m) in columns {
            if !cell(i).is_empty() {
                metrics.set(m, cell_f64(&c, i, m.name(), ln)?);
            }
        }
        if metrics.is_empty() {
            continue;
        }
        let n = |i: usize| cell(i).parse::<u64>().ok();
        let key = Key {
            op: Some(cell(2).to_uppercase()).filter(|s| !s.is_empty()),
            size: n(3),
            postlist: n(4),
            threads: None,
        };
        let mut params = BTreeMap::new();
        for (name, i) in [("role", 1), ("flags", 9)] {
            if !cell(i).is_empty() {
                params.insert(name.to_string(), cell(i).to_string());
            }
        }
        out.push(Point {
            source: Source::Ours,
            bench: cell(0).to_string(),
            key,
            metrics,
            trusted: match cell(10) {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            },
            params,
            facts: Facts::default(),
        });
    }
    Ok(out)
}

/// Fills the key field a sweep parameter stands for (`size`, `postlist`, `threads` or
/// `num_threads`, `op`, `do_read`).
fn key_param(key: &mut Key, name: &str, value: &str) {
    let n = || value.trim().parse::<u64>().ok();
    match name.replace('-', "_").as_str() {
        "size" => key.size = n(),
        "postlist" => key.postlist = n(),
        "threads" | "num_threads" => key.threads = n(),
        "op" => key.op = Some(value.trim().to_uppercase()),
        "do_read" => key.op = n().map(|r| if r == 1 { "READ" } else { "WRITE" }.to_string()),
        _ => {}
    }
}

/// A sweep point's medians as a [`Point`] (its key from the parameters that name one).
fn point_of(p: &SweepPoint, params: &[String]) -> Result<Point, String> {
    let mut key = Key::default();
    let mut others = BTreeMap::new();
    for name in params {
        if let Some(v) = p.params.get(name) {
            let before = key.clone();
            key_param(&mut key, name, v);
            if key == before {
                others.insert(name.clone(), v.clone());
            }
        }
    }
    if let Some(op) = &p.op {
        key.op = key.op.or_else(|| Some(op.clone()));
    }
    let mut metrics = Metrics::default();
    for (name, s) in &p.metrics {
        if let Some(m) = Metric::parse(name) {
            metrics.set(m, s.median);
        }
    }
    Ok(Point {
        source: p
            .source
            .as_deref()
            .and_then(Source::parse)
            .unwrap_or(Source::Ours),
        bench: p.bench.clone().unwrap_or_default(),
        key,
        metrics,
        trusted: (p.untrusted > 0).then_some(false),
        params: others,
        facts: Facts::default(),
    })
}

/// The points of a sweep's `PREFIX.csv`; a metric this reader does not know is an error.
pub(super) fn points_of_csv(text: &str) -> Result<Vec<Point>, String> {
    let sweeps = parse_sweep_csv(text, "")?;
    let mut out = Vec::new();
    for s in &sweeps {
        for p in &s.points {
            if let Some(name) = p.metrics.keys().find(|n| Metric::parse(n).is_none()) {
                return Err(format!("unknown metric {name}"));
            }
            out.push(point_of(p, &s.params)?);
        }
    }
    Ok(out)
}

/// The points of a sweep's `PREFIX.json`.
pub(super) fn points_of_json(text: &str) -> Result<Vec<Point>, String> {
    let s = parse_json(text, "")?;
    s.points.iter().map(|p| point_of(p, &s.params)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_keep_quoted_commas_and_quotes() {
        assert_eq!(
            split_csv("a,,\"b,c\",\"say \"\"hi\"\"\"\r"),
            ["a", "", "b,c", "say \"hi\""]
        );
    }

    #[test]
    fn suite_rows_with_one_label_are_told_apart() {
        let csv = "bench,role,op,size,postlist,mops,lat_avg_us,lat_median_us,lat_p99_us,flags
herd,worker,SEND,32,1,0.0124,,,,--num-workers 1 --update-percentage 0
herd,worker,SEND,32,1,0.0125,,,,--num-workers 1 --update-percentage 5,0
rc-swarm,worker,READ,32,1,0.0123,,,,--num-threads 1,1
rc-swarm,worker,READ,32,1,0.0125,,,,--num-threads 1
";
        let rows = parse_suite(csv).unwrap();
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "herd worker SEND 32/1 --update-percentage 0",
                "herd worker SEND 32/1 --update-percentage 5",
                "rc-swarm worker READ 32/1 #1",
                "rc-swarm worker READ 32/1 #2",
            ]
        );
        let questionable: Vec<bool> = rows.iter().map(|r| r.questionable).collect();
        assert_eq!(questionable, [false, true, false, false]);
    }

    #[test]
    fn suite_rows_without_mops_are_left_out_and_labels_skip_empty_cells() {
        let text = "bench,role,op,size,postlist,mops,lat_avg_us,lat_median_us,lat_p99_us,flags\n\
                    rw-allsig,server,write,8,,1.25,,,,\n\
                    rw-postlist-latency,server,write,32,16,,4.2,4.1,6.3,\n\
                    herd,client,get,,,0.5,,,,\n";
        let rows = parse_suite(text).expect("parses");
        let got: Vec<(&str, f64)> = rows.iter().map(|r| (r.label.as_str(), r.mops)).collect();
        assert_eq!(
            got,
            [("rw-allsig server write 8", 1.25), ("herd client get", 0.5)]
        );
        let bad = parse_suite("bench,role,op,size,postlist,mops\nx,y,z,1,1,fast\n");
        assert_eq!(
            bad,
            Err("line 2: `mops` is `fast`, not a number".to_string())
        );
    }

    #[test]
    fn sweep_csv_rows_group_by_label_and_params() {
        let text = "label,qps,metric,unit,n,median,mean,min,max,ci95_low,ci95_high\n\
                    a,1,mops,Mops,1,1.0,1.0,1.0,1.0,,\n\
                    a,1,lat_p99_us,us,1,9.0,9.0,9.0,9.0,,\n\
                    b,2,mops,Mops,3,2.0,2.0,1.5,2.5,1.8,2.2\n";
        let s = parse_sweep_csv(text, "stem").expect("parses");
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].label.as_str(), s[0].points.len()), ("a", 1));
        assert_eq!(s[0].points[0].metrics.len(), 2);
        assert_eq!(s[0].points[0].metrics["mops"].ci95, None);
        assert_eq!(s[1].points[0].metrics["mops"].ci95, Some((1.8, 2.2)));
        assert_eq!(s[1].params, ["qps"]);
    }
}
