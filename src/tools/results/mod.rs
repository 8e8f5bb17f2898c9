//! Reading benchmark output into measurements: our benchmarks' text and `--json` lines, our and
//! perftest's tables and JSON documents, the original C suite's log lines, and the CSV and JSON
//! files of `rdma-bench sweep`. One reader for `sweep`, `compare` and `plot`.
//!
//! [`parse`] turns the text of one run (or a recorded file) into [`Measurement`]s, one per report
//! line or table row; [`points`] reduces them to one [`Point`] per distinct [`Key`] (what a run
//! measured, as a table would show it); [`read_points`] does both for a file, sniffing its format,
//! and also reads sweep files.

mod lines;
mod metric;
mod perftest;
mod points;
pub mod sweep_file;

pub use lines::{command_hints, Hints};
pub use metric::{Metric, Metrics};
pub use points::{points, Key, Point};
pub use sweep_file::points_of_suite;

use crate::error::{Error, Result};

/// The output format a measurement was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Our benchmarks (`rw-tput-sender` etc.): their text summary or `--json` lines.
    Ours,
    /// perftest's tables or JSON (perftest's `ib_*` tools, and `rdma-bench write-bw` etc., which
    /// print the same).
    Perftest,
    /// The original C suite's log lines (`main: Server 0: 4000000.00 IOPS`).
    Original,
}

impl Source {
    /// Lowercase name, as sweep JSON stores it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Ours => "ours",
            Source::Perftest => "perftest",
            Source::Original => "original",
        }
    }

    /// The source named `s` ([`Source::name`]).
    pub fn parse(s: &str) -> Option<Source> {
        [Source::Ours, Source::Perftest, Source::Original]
            .into_iter()
            .find(|x| x.name() == s)
    }
}

/// What a report line stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The end-of-run result of a process (our summary line, a perftest row, a latency summary).
    Summary,
    /// One thread's rate over the last interval (the once-a-second lines).
    Interval,
    /// A snapshot of the total rate printed during the run (the original's `Total throughput`).
    Total,
}

/// One reported result: what was measured (bench, op, size, …, as far as the output says) and
/// the values.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The format it was read from.
    pub source: Source,
    /// Benchmark name: ours as the binary (`rw-tput-sender`), perftest's as its tool
    /// (`ib_write_bw`); empty when the output does not say.
    pub bench: String,
    /// Which process reported it: the output's role (`server`, `client`, `worker`), or the
    /// `[label]` prefix that `run-local.sh` puts on each line.
    pub role: Option<String>,
    /// Operation in upper case: `WRITE`, `READ`, `SEND`, `ATOMIC`, …
    pub op: Option<String>,
    /// Payload bytes.
    pub size: Option<u64>,
    /// Work requests per doorbell.
    pub postlist: Option<u64>,
    /// Threads of the reporting process.
    pub threads: Option<u64>,
    /// The reporting thread's id ([`Kind::Interval`] lines).
    pub thread: Option<u64>,
    /// What the line stands for.
    pub kind: Kind,
    /// The values.
    pub metrics: Metrics,
    /// What the fabric's counters said of the run (`"trusted"` in our JSON and in our perftest
    /// documents): false when it is questionable; None when nothing says.
    pub trusted: Option<bool>,
    /// Where it ran and what the counters saw, as far as the output says.
    pub facts: Facts,
}

/// What a result's own output says beyond its values: the device it ran on and the fabric's
/// counters over the run (our `--json` summaries and perftest documents: `counters`,
/// `questionable`, perftest's `Device`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The RDMA device (`rxe0`).
    pub device: Option<String>,
    /// Its port.
    pub port: Option<u32>,
    /// The counters' change over the run: (port as `rxe0:1`, counter name, delta), in the
    /// output's order.
    pub counters: Vec<(String, String, f64)>,
    /// The classes of counters that made the run questionable (`retransmission`, `link`, …).
    pub questionable: Vec<String>,
}

impl Facts {
    /// The facts of a JSON object that carries our counters fields (`counters`: port → name →
    /// delta; `questionable`) and perftest's `test_info.Device`.
    pub(crate) fn of_json(v: &serde_json::Value) -> Facts {
        let mut f = Facts::default();
        if let Some(ports) = v.get("counters").and_then(serde_json::Value::as_object) {
            for (port, names) in ports {
                let Some(names) = names.as_object() else {
                    continue;
                };
                if f.device.is_none() {
                    if let Some((d, p)) = port.rsplit_once(':') {
                        f.device = Some(d.to_string());
                        f.port = p.parse().ok();
                    }
                }
                for (name, delta) in names {
                    if let Some(d) = delta.as_f64() {
                        f.counters.push((port.clone(), name.clone(), d));
                    }
                }
            }
        }
        if let Some(q) = v.get("questionable").and_then(serde_json::Value::as_array) {
            f.questionable = q
                .iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect();
        }
        if let Some(d) = v
            .get("test_info")
            .and_then(|i| i.get("Device"))
            .and_then(serde_json::Value::as_str)
        {
            f.device = Some(d.to_string());
        }
        f
    }
}

impl Measurement {
    /// A measurement with nothing known but its source and kind.
    pub fn new(source: Source, kind: Kind) -> Measurement {
        Measurement {
            source,
            bench: String::new(),
            role: None,
            op: None,
            size: None,
            postlist: None,
            threads: None,
            thread: None,
            kind,
            metrics: Metrics::default(),
            trusted: None,
            facts: Facts::default(),
        }
    }
}

/// The format of a file, as [`sniff`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON document (perftest's `--out_json_file`, also 4.5's not-quite-JSON, or a sweep's
    /// `PREFIX.json`).
    JsonDocument,
    /// A sweep's `PREFIX.csv`.
    SweepCsv,
    /// A sweep's `PREFIX.runs.csv`.
    SweepRunsCsv,
    /// Lines: JSON lines, perftest tables, our or the original's text (told apart line by line).
    Lines,
}

/// Tells what kind of file `text` is.
pub fn sniff(text: &str) -> Format {
    let trimmed = text.trim_start();
    let first = trimmed.lines().next().unwrap_or("");
    if first.starts_with("label,") && first.contains(",metric,unit,n,median,") {
        return Format::SweepCsv;
    }
    if first.starts_with("rep,ok,metric,unit,value,seconds")
        || first.contains(",rep,ok,metric,unit,value,seconds")
    {
        return Format::SweepRunsCsv;
    }
    if trimmed.starts_with('{') {
        // One JSON value in the whole file: perftest's document or a sweep's (our JSON lines are
        // many values, or one with a "bench" key).
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(trimmed) {
            if v.get("test_info").is_some() || v.get("points").is_some() {
                return Format::JsonDocument;
            }
        } else if perftest::document_of_text(trimmed).is_some() {
            return Format::JsonDocument;
        }
    }
    Format::Lines
}

/// Measurements in the output of one run (or a recording of one): every line is looked at, with
/// a `[label] ` prefix (`run-local.sh`) taken as the role. Where the output has JSON (our `--json`
/// lines, perftest's document), the text lines that say the same are dropped.
pub fn parse(text: &str) -> Vec<Measurement> {
    let mut out = lines::parse_lines(text);
    // perftest's JSON (on a line of its own, as run-local.sh prints it) says what its table says.
    if !out.iter().any(|m| m.source == Source::Perftest) {
        out.extend(perftest::parse_tables(text));
    }
    let hints = command_hints(text);
    for m in &mut out {
        hints.fill(m);
    }
    out
}

/// The points of a file: any format above, or a sweep's CSV or JSON (its medians).
pub fn read_points(path: &str) -> Result<Vec<Point>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(format!("cannot read {path}: {e}")))?;
    points_of_text(&text).map_err(|e| Error::config(format!("{path}: {e}")))
}

/// The points of a file's text (see [`read_points`]); the error says what is wrong in it.
pub fn points_of_text(text: &str) -> std::result::Result<Vec<Point>, String> {
    match sniff(text) {
        Format::SweepCsv => sweep_file::points_of_csv(text),
        Format::SweepRunsCsv => Err("this is a sweep's resume log (PREFIX.runs.csv); \
             give its PREFIX.csv or PREFIX.json"
            .into()),
        Format::JsonDocument => {
            let v: serde_json::Value = match perftest::document_of_text(text) {
                Some(v) => v,
                None => serde_json::from_str(text.trim()).map_err(|e| format!("bad JSON: {e}"))?,
            };
            if v.get("points").is_some() {
                sweep_file::points_of_json(text)
            } else if v.get("test_info").is_some() {
                Ok(points(&perftest::parse_document(&v, None)))
            } else {
                Err("a JSON document that is neither perftest's nor a sweep's".into())
            }
        }
        Format::Lines => Ok(points(&parse(text))),
    }
}

#[cfg(test)]
mod tests;
