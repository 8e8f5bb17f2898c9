//! A sweep's own files as points: `PREFIX.csv` (long form) and `PREFIX.json`, each point's
//! medians.

use serde_json::Value;

use super::{Key, Metric, Metrics, Point, Source};

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

/// The points of a sweep's `PREFIX.csv`.
pub(super) fn points_of_csv(text: &str) -> Result<Vec<Point>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let metric_col = header
        .iter()
        .position(|h| *h == "metric")
        .ok_or("no metric column")?;
    let median_col = header
        .iter()
        .position(|h| *h == "median")
        .ok_or("no median column")?;
    let params = &header[1..metric_col];
    let mut out: Vec<(Vec<String>, Point)> = Vec::new();
    for (i, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() != header.len() {
            return Err(format!(
                "row {} has {} cells, the header {}",
                i + 2,
                cells.len(),
                header.len()
            ));
        }
        let values: Vec<String> = cells[1..metric_col].iter().map(|s| s.to_string()).collect();
        let metric = Metric::parse(cells[metric_col])
            .ok_or_else(|| format!("row {}: unknown metric {}", i + 2, cells[metric_col]))?;
        let median: f64 = cells[median_col].parse().map_err(|_| {
            format!(
                "row {}: median {:?} is not a number",
                i + 2,
                cells[median_col]
            )
        })?;
        let at = match out.iter().position(|(v, _)| *v == values) {
            Some(at) => at,
            None => {
                let mut key = Key::default();
                for (p, v) in params.iter().zip(&values) {
                    key_param(&mut key, p, v);
                }
                out.push((
                    values,
                    Point {
                        source: Source::Ours,
                        bench: String::new(),
                        key,
                        metrics: Metrics::default(),
                    },
                ));
                out.len() - 1
            }
        };
        out[at].1.metrics.set(metric, median);
    }
    Ok(out.into_iter().map(|(_, p)| p).collect())
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The points of a sweep's `PREFIX.json`.
pub(super) fn points_of_json(doc: &Value) -> Result<Vec<Point>, String> {
    let points = doc["points"].as_array().ok_or("\"points\" is not a list")?;
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let mut key = Key::default();
        if let Some(params) = p.get("params").and_then(Value::as_object) {
            for (name, v) in params {
                key_param(&mut key, name, &value_text(v));
            }
        }
        if let Some(op) = p.get("op").and_then(Value::as_str) {
            key.op = key.op.or_else(|| Some(op.to_string()));
        }
        let mut metrics = Metrics::default();
        let ms = p
            .get("metrics")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("point {i} has no metrics"))?;
        for (name, m) in ms {
            if let (Some(metric), Some(median)) =
                (Metric::parse(name), m.get("median").and_then(Value::as_f64))
            {
                metrics.set(metric, median);
            }
        }
        out.push(Point {
            source: p
                .get("source")
                .and_then(Value::as_str)
                .and_then(Source::parse)
                .unwrap_or(Source::Ours),
            bench: p
                .get("bench")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            key,
            metrics,
        });
    }
    Ok(out)
}
