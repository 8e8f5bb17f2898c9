//! From inputs to what is drawn: which kind of chart, which parameter on x, which metrics on y,
//! one series per file × combination of the other parameters × metric, error bars from the
//! repetitions. No drawing here (that is `draw`), so the choices are testable on their own.

use super::input::{Input, Point, Stat, Sweep};
use super::pick::{
    choose_metrics, choose_x, is_count_param, is_latency, is_size_param, short, unit_of,
};
use crate::error::{Error, Result};

/// The chart kinds `--kind` names.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// results.csv → bars; x `size` → rate vs size (log2 x); threads/QPs/clients → scaling;
    /// latency metrics → percentile lines.
    Auto,
    /// Rate or bandwidth against a parameter (log2 x for sizes).
    Rate,
    /// Latency percentiles (median, p99, p99.9 when present), one line each per file.
    Latency,
    /// Rate against a count (threads, QPs, clients), linear x.
    Scaling,
    /// Horizontal bars of Mops per row of the suite's results.csv.
    Bars,
}

/// What the error bars span (`--err`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrSpan {
    /// Smallest to largest repetition.
    Minmax,
    /// The 95 % confidence interval of the sweep.
    Ci,
    /// No error bars.
    None,
}

/// The choices that shape a line chart (from the command line).
#[derive(Debug, Clone)]
pub struct Choice {
    /// `--kind`.
    pub kind: Kind,
    /// `--x`.
    pub x: Option<String>,
    /// `--metric`, in order.
    pub metrics: Vec<String>,
    /// `--err`.
    pub err: ErrSpan,
    /// `Some(true)` for `--log-x`, `Some(false)` for `--linear-x`.
    pub log_x: Option<bool>,
    /// `--title`.
    pub title: Option<String>,
}

/// One plotted point: the median, and the error bar's span if there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Pt {
    /// x value.
    pub x: f64,
    /// Median of the repetitions.
    pub y: f64,
    /// Lower and upper end of the error bar.
    pub err: Option<(f64, f64)>,
    /// A repetition behind it was questionable (the fabric's counters moved).
    pub questionable: bool,
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points sorted by x.
    pub points: Vec<Pt>,
}

/// A line chart, ready to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    /// The kind it was resolved to (never `Auto` or `Bars`).
    pub kind: Kind,
    /// Title on top.
    pub title: String,
    /// x axis description.
    pub x_label: String,
    /// y axis description.
    pub y_label: String,
    /// log2 x axis.
    pub log_x: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// A horizontal bar chart of the suite's rows, one bar per row and file.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// Title on top.
    pub title: String,
    /// Row labels, top to bottom, in order of first appearance over the files.
    pub rows: Vec<String>,
    /// Per file: legend text and Mops per row (None = the file lacks that row).
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// Per file and row: the run's counters made that bar questionable.
    pub questionable: Vec<Vec<bool>>,
}

/// What `plot` draws.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    /// Lines over a parameter.
    Lines(Lines),
    /// Bars per suite row.
    Bars(Bars),
}

/// Resolves the inputs and choices into one chart, or says in one line why it cannot.
pub fn build(inputs: Vec<Input>, c: &Choice) -> Result<Chart> {
    let (mut sweeps, mut suites) = (Vec::new(), Vec::new());
    for i in inputs {
        match i {
            Input::Sweeps(s) => sweeps.extend(s),
            Input::Suite { label, rows } => suites.push((label, rows)),
        }
    }
    if !suites.is_empty() {
        if !sweeps.is_empty() {
            return Err(Error::config(
                "results.csv and sweep files cannot share one chart",
            ));
        }
        return match c.kind {
            Kind::Auto | Kind::Bars => bars(suites, c),
            k => Err(Error::config(format!(
                "results.csv can only be drawn as bars, not --kind {}",
                format!("{k:?}").to_lowercase()
            ))),
        };
    }
    if c.kind == Kind::Bars {
        return Err(Error::config(
            "--kind bars is for the suite's results.csv; sweeps are drawn as lines",
        ));
    }
    if sweeps.is_empty() {
        return Err(Error::config("no points: the files hold no sweep"));
    }
    lines(sweeps, c).map(Chart::Lines)
}

fn bars(suites: Vec<(String, Vec<super::input::SuiteRow>)>, c: &Choice) -> Result<Chart> {
    if let Some(m) = c.metrics.iter().find(|m| *m != "mops") {
        return Err(Error::config(format!(
            "results.csv is drawn as Mops per row; --metric {m} does not apply"
        )));
    }
    let mut rows: Vec<String> = Vec::new();
    for (_, rs) in &suites {
        for r in rs {
            if !rows.contains(&r.label) {
                rows.push(r.label.clone());
            }
        }
    }
    if rows.is_empty() {
        return Err(Error::config(
            "no points: no row of results.csv has a Mops value",
        ));
    }
    let labels: Vec<&str> = suites.iter().map(|(l, _)| l.as_str()).collect();
    let title = c
        .title
        .clone()
        .unwrap_or_else(|| format!("Mops per benchmark: {}", labels.join(" vs ")));
    let series = suites
        .iter()
        .map(|(l, rs)| {
            let v = rows
                .iter()
                .map(|name| rs.iter().find(|r| &r.label == name).map(|r| r.mops))
                .collect();
            (l.clone(), v)
        })
        .collect();
    let questionable = suites
        .iter()
        .map(|(_, rs)| {
            rows.iter()
                .map(|name| rs.iter().any(|r| &r.label == name && r.questionable))
                .collect()
        })
        .collect();
    Ok(Chart::Bars(Bars {
        title,
        rows,
        series,
        questionable,
    }))
}

fn lines(sweeps: Vec<Sweep>, c: &Choice) -> Result<Lines> {
    let x = choose_x(&sweeps, c)?;
    let metrics = choose_metrics(&sweeps, c)?;
    let units: Vec<String> = metrics.iter().map(|m| unit_of(&sweeps, m)).collect();
    if units.iter().any(|u| *u != units[0]) {
        return Err(Error::config(format!(
            "metrics {} have different units ({}) and cannot share one y axis",
            metrics.join(", "),
            units.join(", ")
        )));
    }
    let kind = match c.kind {
        Kind::Auto if metrics.iter().all(|m| is_latency(m)) => Kind::Latency,
        Kind::Auto if is_count_param(&x) => Kind::Scaling,
        Kind::Auto => Kind::Rate,
        k => k,
    };
    let mut series = Vec::new();
    for s in &sweeps {
        series.extend(sweep_series(s, &x, &metrics, c.err)?);
    }
    series.retain(|s| !s.points.is_empty());
    // A grid of doubling values (`postlist=1..64`) reads best on a log2 axis too.
    let xs = || series.iter().flat_map(|s| &s.points).map(|p| p.x);
    let doubling = xs().all(|v| v >= 1.0 && v.fract() == 0.0 && (v as u64).is_power_of_two())
        && xs().fold(f64::MIN, f64::max) >= 8.0 * xs().fold(f64::MAX, f64::min);
    let log_x = c
        .log_x
        .unwrap_or(kind != Kind::Scaling && (is_size_param(&x) || doubling));
    if series.is_empty() {
        return Err(Error::config(format!(
            "no points: no point has {} and {x}",
            metrics.join(" or ")
        )));
    }
    if log_x {
        if let Some(p) = series.iter().flat_map(|s| &s.points).find(|p| p.x <= 0.0) {
            return Err(Error::config(format!(
                "{x} = {} cannot go on a log axis; use --linear-x",
                p.x
            )));
        }
    }
    let y_name = match metrics[0].as_str() {
        "mops" => "Rate",
        "bw_mbps" => "Bandwidth",
        _ => "Latency",
    };
    let y_label = format!("{y_name} ({})", units[0]);
    let labels: Vec<&str> = sweeps.iter().map(|s| s.label.as_str()).collect();
    let title = c
        .title
        .clone()
        .unwrap_or_else(|| format!("{y_name} vs {x}: {}", labels.join(" vs ")));
    let x_label = if is_size_param(&x) {
        format!("{x} (bytes)")
    } else {
        x.clone()
    };
    Ok(Lines {
        kind,
        title,
        x_label,
        y_label,
        log_x,
        series,
    })
}

/// Values of the parameters other than x, in name order.
type Combo = Vec<(String, String)>;

/// The series of one sweep: one per combination of the parameters other than `x`, per metric.
fn sweep_series(s: &Sweep, x: &str, metrics: &[String], err: ErrSpan) -> Result<Vec<Series>> {
    let mut combos: Vec<(Combo, Vec<&Point>)> = Vec::new();
    for p in &s.points {
        let key: Vec<(String, String)> = p
            .params
            .iter()
            .filter(|(k, _)| k.as_str() != x)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match combos.iter_mut().find(|(k, _)| *k == key) {
            Some((_, ps)) => ps.push(p),
            None => combos.push((key, vec![p])),
        }
    }
    let mut out = Vec::new();
    for (key, points) in &combos {
        for m in metrics {
            let mut label = s.label.clone();
            for (k, v) in key.iter().filter(|_| combos.len() > 1) {
                label.push_str(&format!(" {k}={v}"));
            }
            if metrics.len() > 1 {
                label.push_str(&format!(" {}", short(m)));
            }
            let mut pts = Vec::new();
            for p in points {
                let Some(st) = p.metrics.get(m) else { continue };
                let raw = p.params.get(x).map(String::as_str).unwrap_or("");
                let xv: f64 = raw.trim().parse().map_err(|_| {
                    Error::config(format!(
                        "x param `{x}` has a non-number value `{raw}` in {}",
                        s.label
                    ))
                })?;
                pts.push(Pt {
                    x: xv,
                    y: st.median,
                    err: span(st, err),
                    questionable: p.untrusted > 0,
                });
            }
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            if let Some(w) = pts.windows(2).find(|w| w[0].x == w[1].x) {
                return Err(Error::config(format!(
                    "{label}: two points at {x} = {} with the same other params",
                    w[0].x
                )));
            }
            out.push(Series { label, points: pts });
        }
    }
    Ok(out)
}

fn span(st: &Stat, err: ErrSpan) -> Option<(f64, f64)> {
    match err {
        _ if st.n < 2 => None,
        ErrSpan::Minmax => Some((st.min, st.max)),
        ErrSpan::Ci => st.ci95,
        ErrSpan::None => None,
    }
}
