//! A sweep's results: per point and metric the statistics of its repetitions, written as
//! `PREFIX.csv` (long form) and `PREFIX.json`, and the table printed at the end.

use serde_json::{json, Map, Value};

use super::runlog::Run;
use crate::stats::SampleStats;
use crate::tools::results::Metric;

/// What a sweep was.
#[derive(Debug, Clone)]
pub struct Shape<'a> {
    /// `--label`.
    pub label: &'a str,
    /// The command, placeholders unsubstituted.
    pub command: &'a [String],
    /// Parameter names.
    pub names: &'a [String],
    /// The grid's points.
    pub points: &'a [Vec<String>],
    /// The sweep's metric.
    pub metric: Metric,
    /// Repetitions per point.
    pub reps: usize,
}

/// One metric at one point.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The metric.
    pub metric: Metric,
    /// Its values, in run order.
    pub values: Vec<f64>,
    /// Their statistics.
    pub stats: SampleStats,
}

/// A point's results.
#[derive(Debug, Clone)]
pub struct PointResult {
    /// The point's values.
    pub values: Vec<String>,
    /// Benchmark and operation its runs reported.
    pub bench: String,
    /// Operation.
    pub op: Option<String>,
    /// One cell per metric that the runs printed, in [`Metric::ALL`]'s order.
    pub cells: Vec<Cell>,
    /// Repetitions whose counters made them questionable.
    pub untrusted: usize,
}

/// The results of every grid point from the ok runs (the last row of a point and repetition
/// counts, in the order the runs were made).
pub fn summarize(shape: &Shape<'_>, runs: &[Run]) -> Vec<PointResult> {
    shape
        .points
        .iter()
        .map(|pt| {
            let mut mine: Vec<&Run> = Vec::new();
            // Repetitions beyond --reps (an earlier, longer sweep into the same files) are
            // left out: n never exceeds the reps the JSON states.
            for r in runs
                .iter()
                .filter(|r| r.ok && r.values == *pt && r.rep < shape.reps)
            {
                mine.retain(|x| x.rep != r.rep);
                mine.push(r);
            }
            let cells = Metric::ALL
                .into_iter()
                .filter_map(|m| {
                    let values: Vec<f64> = mine.iter().filter_map(|r| r.all.get(m)).collect();
                    SampleStats::of(&values).map(|stats| Cell {
                        metric: m,
                        values,
                        stats,
                    })
                })
                .collect();
            PointResult {
                values: pt.clone(),
                bench: mine
                    .iter()
                    .map(|r| r.bench.clone())
                    .find(|b| !b.is_empty())
                    .unwrap_or_default(),
                op: mine.iter().find_map(|r| r.op.clone()),
                cells,
                untrusted: mine.iter().filter(|r| r.trusted == Some(false)).count(),
            }
        })
        .collect()
}

/// A number for files and tables: up to 6 decimals, no trailing zeros.
pub fn num(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// `PREFIX.csv`: one row per point and metric.
pub fn csv(shape: &Shape<'_>, results: &[PointResult]) -> String {
    let mut h = vec!["label".to_string()];
    h.extend(shape.names.iter().cloned());
    h.extend(
        [
            "metric",
            "unit",
            "n",
            "median",
            "mean",
            "min",
            "max",
            "ci95_low",
            "ci95_high",
            "untrusted",
        ]
        .map(String::from),
    );
    let mut out = h.join(",") + "\n";
    for p in results {
        for c in &p.cells {
            let s = &c.stats;
            let mut row = vec![shape.label.to_string()];
            row.extend(p.values.iter().cloned());
            row.push(c.metric.name().into());
            row.push(c.metric.unit().into());
            row.push(s.n.to_string());
            for v in [s.median, s.mean, s.min, s.max, s.ci95_low(), s.ci95_high()] {
                row.push(num(v));
            }
            row.push(p.untrusted.to_string());
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

/// A parameter's value in JSON: a number when it reads as one.
fn param_value(v: &str) -> Value {
    if let Ok(n) = v.parse::<u64>() {
        json!(n)
    } else if let Ok(f) = v.parse::<f64>() {
        json!(f)
    } else {
        json!(v)
    }
}

/// A statistic in JSON, rounded as in the CSV.
fn stat(v: f64) -> Value {
    num(v)
        .parse::<f64>()
        .map(|x| json!(x))
        .unwrap_or(Value::Null)
}

/// `PREFIX.json`.
pub fn json(shape: &Shape<'_>, results: &[PointResult]) -> String {
    let points: Vec<Value> = results
        .iter()
        .map(|p| {
            let params: Map<String, Value> = shape
                .names
                .iter()
                .cloned()
                .zip(p.values.iter().map(|v| param_value(v)))
                .collect();
            let metrics: Map<String, Value> = p
                .cells
                .iter()
                .map(|c| {
                    let s = &c.stats;
                    (
                        c.metric.name().to_string(),
                        json!({"unit": c.metric.unit(), "n": s.n, "median": stat(s.median),
                            "mean": stat(s.mean), "min": stat(s.min), "max": stat(s.max),
                            "ci95_low": stat(s.ci95_low()), "ci95_high": stat(s.ci95_high()),
                            "values": c.values}),
                    )
                })
                .collect();
            let mut o = json!({"params": params, "metrics": metrics, "untrusted": p.untrusted});
            if !p.bench.is_empty() {
                o["bench"] = json!(p.bench);
            }
            if let Some(op) = &p.op {
                o["op"] = json!(op);
            }
            o
        })
        .collect();
    let doc = json!({"label": shape.label, "command": shape.command, "params": shape.names,
        "metric": shape.metric.name(), "reps": shape.reps, "points": points});
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// The table printed at the end: per point the sweep metric's n, median, min, max and 95 %
/// confidence interval of the mean.
pub fn table(shape: &Shape<'_>, results: &[PointResult]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head: Vec<String> = shape.names.to_vec();
    let unit = shape.metric.unit();
    head.extend([
        "n".to_string(),
        format!("median [{unit}]"),
        "min".into(),
        "max".into(),
        "95% CI".into(),
    ]);
    rows.push(head);
    for p in results {
        let mut row = p.values.clone();
        match p.cells.iter().find(|c| c.metric == shape.metric) {
            Some(c) => {
                let s = &c.stats;
                row.push(s.n.to_string());
                row.extend([num4(s.median), num4(s.min), num4(s.max)]);
                row.push(format!("{} .. {}", num4(s.ci95_low()), num4(s.ci95_high())));
            }
            None => row.extend(["0", "–", "–", "–", "–"].map(String::from)),
        }
        rows.push(row);
    }
    align(&rows)
}

/// Four significant decimals for the table.
fn num4(v: f64) -> String {
    format!("{v:.4}")
}

/// Columns padded to their widest cell, two spaces apart.
pub fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            line.extend(std::iter::repeat_n(
                ' ',
                width[c].saturating_sub(cell.chars().count()),
            ));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
