//! The choices `plot` makes when the command line leaves them open: which parameter goes on x,
//! which metrics on y, and the names they get on the chart.

use super::chart::{Choice, Kind};
use super::input::Sweep;
use crate::error::{Error, Result};
use crate::tools::results::Metric;

/// Legend suffix of a metric.
pub fn short(metric: &str) -> &str {
    match metric {
        "mops" => "Mops",
        "bw_mbps" => "MB/s",
        "lat_avg_us" => "avg",
        "lat_median_us" => "median",
        "lat_p99_us" => "p99",
        "lat_p999_us" => "p99.9",
        "lat_min_us" => "min",
        "lat_max_us" => "max",
        other => other,
    }
}

pub(super) fn is_latency(metric: &str) -> bool {
    Metric::parse(metric).is_some_and(Metric::lower_is_better)
}

/// A parameter that counts things (threads, QPs, clients…): a scaling chart's x.
pub fn is_count_param(p: &str) -> bool {
    let n = p
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('-', "_");
    [
        "thread", "qp", "client", "worker", "machine", "core", "proc", "node",
    ]
    .iter()
    .any(|w| n.contains(w))
}

pub(super) fn is_size_param(p: &str) -> bool {
    let n = p
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('-', "_");
    n == "size" || n.ends_with("_size")
}

fn param_names(s: &Sweep) -> Vec<String> {
    let mut names = s.params.clone();
    for p in &s.points {
        for k in p.params.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
}

pub(super) fn choose_x(sweeps: &[Sweep], c: &Choice) -> Result<String> {
    let names: Vec<Vec<String>> = sweeps.iter().map(param_names).collect();
    if let Some(x) = &c.x {
        for (s, n) in sweeps.iter().zip(&names) {
            if !n.contains(x) {
                return Err(Error::config(format!(
                    "x param `{x}` is not in {} (its params: {})",
                    s.label,
                    list(n)
                )));
            }
        }
        return Ok(x.clone());
    }
    let common: Vec<&String> = names[0]
        .iter()
        .filter(|p| names.iter().all(|n| n.contains(p)))
        .collect();
    let pick = common
        .iter()
        .find(|p| p.as_str() == "size")
        .or_else(|| common.iter().find(|p| is_count_param(p)))
        .or_else(|| common.iter().find(|p| is_size_param(p)))
        .or(if common.len() == 1 {
            common.first()
        } else {
            None
        });
    match pick {
        Some(p) => Ok(p.to_string()),
        None if common.is_empty() => Err(Error::config(
            "x param absent: the sweeps have no parameter in common to put on the x axis",
        )),
        None => Err(Error::config(format!(
            "choose the x axis with --x (params: {})",
            list(&common.into_iter().cloned().collect::<Vec<_>>())
        ))),
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn present(sweeps: &[Sweep], m: &str) -> bool {
    sweeps
        .iter()
        .any(|s| s.points.iter().any(|p| p.metrics.contains_key(m)))
}

pub(super) fn choose_metrics(sweeps: &[Sweep], c: &Choice) -> Result<Vec<String>> {
    for m in &c.metrics {
        if Metric::parse(m).is_none() {
            return Err(Error::config(format!(
                "unknown metric `{m}` (known: {})",
                Metric::names()
            )));
        }
        if !present(sweeps, m) {
            return Err(Error::config(format!(
                "no points: no sweep has metric `{m}`"
            )));
        }
    }
    if !c.metrics.is_empty() {
        return Ok(c.metrics.clone());
    }
    let percentiles: Vec<String> = ["lat_median_us", "lat_p99_us", "lat_p999_us"]
        .into_iter()
        .filter(|m| present(sweeps, m))
        .map(str::to_string)
        .collect();
    let first = sweeps
        .iter()
        .filter_map(|s| s.metric.clone())
        .find(|m| present(sweeps, m))
        .or_else(|| {
            Metric::ALL
                .map(Metric::name)
                .into_iter()
                .find(|m| present(sweeps, m))
                .map(str::to_string)
        })
        .ok_or_else(|| Error::config("no points: the sweeps hold no known metric"))?;
    let latency = c.kind == Kind::Latency || (c.kind == Kind::Auto && is_latency(&first));
    if latency && !percentiles.is_empty() {
        return Ok(percentiles);
    }
    if c.kind == Kind::Latency && !is_latency(&first) {
        return Metric::ALL
            .map(Metric::name)
            .into_iter()
            .find(|m| is_latency(m) && present(sweeps, m))
            .map(|m| vec![m.to_string()])
            .ok_or_else(|| Error::config("--kind latency: the sweeps hold no latency metric"));
    }
    Ok(vec![first])
}

pub(super) fn unit_of(sweeps: &[Sweep], m: &str) -> String {
    sweeps
        .iter()
        .flat_map(|s| &s.points)
        .find_map(|p| p.metrics.get(m).map(|s| s.unit.clone()))
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| match m {
            "mops" => "Mops".into(),
            "bw_mbps" => "MB/s".into(),
            _ => "us".into(),
        })
}
