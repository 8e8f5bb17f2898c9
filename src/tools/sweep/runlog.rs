//! `PREFIX.runs.csv`, one row per run, appended and flushed as each run ends: the sweep's resume
//! log. Beside it `PREFIX.runs.jsonl` keeps every metric a successful run printed (the CSV has
//! the sweep's metric only), so that a resumed sweep's JSON still has them all, and
//! `PREFIX.runs.cmd` the command that made them, so that a sweep of another command never
//! resumes them as its own.

use std::fs::{File, OpenOptions};
use std::io::Write;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::tools::results::{Metric, Metrics};

/// One finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The point's values, in parameter order.
    pub values: Vec<String>,
    /// Repetition.
    pub rep: usize,
    /// It ran and printed the metric.
    pub ok: bool,
    /// The sweep's metric.
    pub metric: Metric,
    /// Its value (ok runs).
    pub value: Option<f64>,
    /// Wall-clock time of the run.
    pub seconds: f64,
    /// Every metric the run printed (ok runs).
    pub all: Metrics,
    /// The benchmark and operation it reported, when it said.
    pub bench: String,
    /// The operation.
    pub op: Option<String>,
    /// What the fabric's counters said of it (None: nothing said).
    pub trusted: Option<bool>,
}

/// The header of the CSV for these parameters.
pub fn header(names: &[String]) -> String {
    let mut h: Vec<&str> = names.iter().map(String::as_str).collect();
    h.extend(["rep", "ok", "metric", "unit", "value", "seconds"]);
    h.join(",")
}

/// The open log.
pub struct RunLog {
    csv: File,
    jsonl: File,
    names: Vec<String>,
}

fn io_err(path: &str, e: std::io::Error) -> Error {
    Error::config(format!("{path}: {e}"))
}

/// Opens `path` for appending; a last line cut short by a kill (no final newline) is cut off
/// first, so that the next row starts a line of its own.
fn open_append(path: &str) -> Result<File> {
    let f = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let text = std::fs::read(path).map_err(|e| io_err(path, e))?;
    if !text.is_empty() && !text.ends_with(b"\n") {
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        f.set_len(keep as u64).map_err(|e| io_err(path, e))?;
    }
    Ok(f)
}

impl RunLog {
    /// Opens (creating, or continuing) `PREFIX.runs.csv` and `PREFIX.runs.jsonl`; returns the
    /// runs already there. A CSV written for other parameters, or by another `command` (the
    /// template, placeholders and all), is an error.
    pub fn open(prefix: &str, names: &[String], command: &[String]) -> Result<(RunLog, Vec<Run>)> {
        let csv_path = format!("{prefix}.runs.csv");
        let jsonl_path = format!("{prefix}.runs.jsonl");
        let cmd_path = format!("{prefix}.runs.cmd");
        let want = header(names);
        let previous = match std::fs::read_to_string(&csv_path) {
            Ok(text) if !text.trim().is_empty() => {
                let got = text.lines().next().unwrap_or("");
                if got != want {
                    return Err(Error::config(format!(
                        "{csv_path} was written by another sweep (header {got:?}, this one writes \
                         {want:?}): give another --out or remove it"
                    )));
                }
                let extra = std::fs::read_to_string(&jsonl_path).unwrap_or_default();
                read_runs(&text, &extra, names.len()).map_err(|e| {
                    Error::config(format!("{csv_path}: {e} (remove the row, or the file)"))
                })?
            }
            Ok(_) => Vec::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_err(&csv_path, e)),
        };
        let ours = json!(command).to_string();
        if previous.is_empty() {
            std::fs::write(&cmd_path, format!("{ours}\n")).map_err(|e| io_err(&cmd_path, e))?;
        } else {
            let theirs = std::fs::read_to_string(&cmd_path).unwrap_or_default();
            if theirs.trim() != ours {
                let made_by = if theirs.trim().is_empty() {
                    "a command it does not name (no .runs.cmd beside it)".to_string()
                } else {
                    format!("another command ({})", theirs.trim())
                };
                return Err(Error::config(format!(
                    "{csv_path} holds {} runs of {made_by}, not of this one ({ours}): give another \
                     --out, or remove {prefix}.runs.* to start over",
                    previous.len()
                )));
            }
        }
        let mut csv = open_append(&csv_path)?;
        if previous.is_empty() && csv.metadata().map(|m| m.len()).unwrap_or(0) == 0 {
            writeln!(csv, "{want}").map_err(|e| io_err(&csv_path, e))?;
        }
        let jsonl = open_append(&jsonl_path)?;
        Ok((
            RunLog {
                csv,
                jsonl,
                names: names.to_vec(),
            },
            previous,
        ))
    }

    /// Appends a run to both files and flushes them.
    pub fn append(&mut self, run: &Run) -> Result<()> {
        let mut row = run.values.clone();
        row.push(run.rep.to_string());
        row.push(if run.ok { "1" } else { "0" }.into());
        row.push(run.metric.name().into());
        row.push(run.metric.unit().into());
        row.push(run.value.map(|v| v.to_string()).unwrap_or_default());
        row.push(format!("{:.3}", run.seconds));
        let fail = |e: std::io::Error| Error::config(format!("writing the sweep's run log: {e}"));
        // One write per row: a kill leaves whole rows, or one cut-off row open_append trims.
        self.csv
            .write_all(format!("{}\n", row.join(",")).as_bytes())
            .map_err(fail)?;
        self.csv.flush().map_err(fail)?;
        if run.ok {
            let params: Map<String, Value> = self
                .names
                .iter()
                .cloned()
                .zip(run.values.iter().map(|v| Value::String(v.clone())))
                .collect();
            let metrics: Map<String, Value> = run
                .all
                .iter()
                .map(|(m, v)| (m.name().to_string(), json!(v)))
                .collect();
            let line = json!({"params": params, "rep": run.rep, "bench": run.bench,
                "op": run.op, "metrics": metrics, "trusted": run.trusted});
            self.jsonl
                .write_all(format!("{line}\n").as_bytes())
                .map_err(fail)?;
            self.jsonl.flush().map_err(fail)?;
        }
        Ok(())
    }
}

/// The runs of a log's text (the CSV, and the JSON lines beside it).
pub fn read_runs(csv: &str, jsonl: &str, nparams: usize) -> std::result::Result<Vec<Run>, String> {
    let mut extra: Vec<(Vec<String>, usize, Value)> = Vec::new();
    for line in jsonl.lines() {
        // A line cut short by a kill is skipped: the CSV's value stands.
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let values: Vec<String> = v["params"]
            .as_object()
            .map(|o| {
                o.values()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default();
        let rep = v["rep"].as_u64().unwrap_or(u64::MAX) as usize;
        extra.push((values, rep, v));
    }
    let mut out = Vec::new();
    for (i, line) in csv.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').collect();
        let bad = |what: &str| format!("row {}: {what}", i + 1);
        if cells.len() != nparams + 6 {
            // The last row of a killed sweep may be cut short.
            if i + 1 == csv.lines().count() && !csv.ends_with('\n') {
                continue;
            }
            return Err(bad("wrong number of cells"));
        }
        let values: Vec<String> = cells[..nparams].iter().map(|s| s.to_string()).collect();
        let rep: usize = cells[nparams].parse().map_err(|_| bad("bad rep"))?;
        let ok = cells[nparams + 1] == "1";
        let metric = Metric::parse(cells[nparams + 2]).ok_or_else(|| bad("unknown metric"))?;
        let value = cells[nparams + 4].parse::<f64>().ok();
        let seconds = cells[nparams + 5].parse::<f64>().unwrap_or(0.0);
        let mut all = Metrics::default();
        let (mut bench, mut op, mut trusted) = (String::new(), None, None);
        if ok {
            if let Some((_, _, v)) = extra
                .iter()
                .rev()
                .find(|(vs, r, _)| *vs == values && *r == rep)
            {
                if let Some(ms) = v["metrics"].as_object() {
                    for (k, x) in ms {
                        if let (Some(m), Some(x)) = (Metric::parse(k), x.as_f64()) {
                            all.set(m, x);
                        }
                    }
                }
                bench = v["bench"].as_str().unwrap_or("").to_string();
                op = v["op"].as_str().map(str::to_string);
                trusted = v["trusted"].as_bool();
            }
            all.set_opt(metric, value);
        }
        out.push(Run {
            values,
            rep,
            ok: ok && value.is_some(),
            metric,
            value,
            seconds,
            all,
            bench,
            op,
            trusted,
        });
    }
    Ok(out)
}
