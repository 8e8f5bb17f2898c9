//! `rdma-bench plot --trend DB --metric M`: one metric over time as a line chart of the plot
//! module (`crate::tools::plot`), one series per host, device, tool and parameters; questionable
//! runs marked as plot marks them, baselines as a flat line at the baseline run's value.

use std::collections::BTreeMap;
use std::path::Path;

use super::db::{self, Filter, Run};
use crate::error::{Error, Result};
use crate::tools::plot::chart::{Kind, Lines, Pt, Series};
use crate::tools::plot::pick::short;
use crate::tools::results::Metric;

/// The chart of `metric` over the runs of `db` (of `tool` and `host` only, when given).
pub fn chart(
    db_path: &Path,
    metric: &str,
    tool: Option<&str>,
    host: Option<&str>,
    title: Option<&str>,
) -> Result<Lines> {
    let m = Metric::parse(metric).ok_or_else(|| {
        Error::usage(format!(
            "--metric {metric}: unknown metric (one of {})",
            Metric::names()
        ))
    })?;
    let conn = db::open(db_path, false)?;
    let f = Filter {
        tool: tool.map(str::to_string),
        host: host.map(str::to_string),
        ..Filter::default()
    };
    let runs: Vec<Run> = db::runs(&conn, &f)
        .map_err(|e| db::bad(db_path, e))?
        .into_iter()
        .filter(|r| r.metric(metric).is_some())
        .collect();
    let Some(t0) = runs.iter().map(|r| r.time).reduce(f64::min) else {
        let only = [("--tool", tool), ("--host", host)]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!(" {k} {v}")))
            .collect::<String>();
        return Err(Error::usage(format!(
            "no run in {} has {metric}{only}",
            db_path.display()
        )));
    };
    let t1 = runs.iter().map(|r| r.time).fold(t0, f64::max);
    let (unit, scale) = if t1 - t0 > 3.0 * 86400.0 {
        ("days", 86400.0)
    } else {
        ("hours", 3600.0)
    };
    let since = runs
        .iter()
        .find(|r| r.time == t0)
        .map(|r| r.time_text.clone())
        .unwrap_or_default();
    // One series per shape, in order of first appearance.
    let mut shapes: Vec<(String, Vec<&Run>)> = Vec::new();
    for r in &runs {
        match shapes.iter_mut().find(|(_, rs)| rs[0].same_shape(r)) {
            Some((_, rs)) => rs.push(r),
            None => {
                let dev = r
                    .device
                    .as_deref()
                    .map(|d| format!(" {d}"))
                    .unwrap_or_default();
                let p = r.params_text();
                let p = if p.is_empty() { p } else { format!(" {p}") };
                shapes.push((format!("{}{dev} {}{p}", r.host, r.tool), vec![r]));
            }
        }
    }
    let x = |r: &Run| (r.time - t0) / scale;
    let mut series: Vec<Series> = shapes
        .iter()
        .map(|(label, rs)| {
            let mut points: Vec<Pt> = rs
                .iter()
                .filter_map(|r| {
                    Some(Pt {
                        x: x(r),
                        y: r.metric(metric)?,
                        err: None,
                        questionable: r.trusted == Some(false),
                    })
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series {
                label: label.clone(),
                points,
            }
        })
        .collect();
    // Baselines: a flat line across the chart at each baseline run's value.
    let (x0, x1) = (0.0, (t1 - t0) / scale);
    let mut st = conn
        .prepare("SELECT name, run_id FROM baselines ORDER BY name, run_id")
        .map_err(|e| db::bad(db_path, e))?;
    let named: Vec<(String, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|r| r.collect())
        .map_err(|e| db::bad(db_path, e))?;
    let mut marked: BTreeMap<(String, usize), f64> = BTreeMap::new();
    for (name, id) in named {
        let Some(r) = runs.iter().find(|r| r.id == id) else {
            continue;
        };
        if let Some(i) = shapes.iter().position(|(_, rs)| rs[0].same_shape(r)) {
            if let Some(v) = r.metric(metric) {
                marked.insert((name, i), v);
            }
        }
    }
    for ((name, i), v) in marked {
        let ends = if x1 > x0 { vec![x0, x1] } else { vec![x0] };
        series.push(Series {
            label: format!(
                "baseline {name}: {} (run value {})",
                shapes[i].0,
                short(metric)
            ),
            points: ends
                .into_iter()
                .map(|x| Pt {
                    x,
                    y: v,
                    err: None,
                    questionable: false,
                })
                .collect(),
        });
    }
    let y_name = match m {
        Metric::Mops => "Rate",
        Metric::BwMbps => "Bandwidth",
        _ => "Latency",
    };
    Ok(Lines {
        kind: if m.lower_is_better() {
            Kind::Latency
        } else {
            Kind::Rate
        },
        title: title
            .map(str::to_string)
            .unwrap_or_else(|| format!("{metric} over time ({})", db_path.display())),
        x_label: format!("{unit} since {since}"),
        y_label: format!("{y_name} ({})", m.unit()),
        log_x: false,
        series,
    })
}
