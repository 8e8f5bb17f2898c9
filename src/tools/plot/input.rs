//! The inputs `rdma-bench plot` reads, into one model: a sweep's JSON (`PREFIX.json`), a
//! sweep's long-form CSV (`PREFIX.csv`), the suite's `results.csv`, and anything else the results
//! reader takes (one run's output, perftest's JSON), drawn as bars like the suite's rows; all
//! read by [`crate::tools::results`]'s one reader of them.

use std::path::Path;

use crate::tools::results::sweep_file::{
    is_suite_header, parse_json, parse_suite, parse_sweep_csv, split_csv,
};
pub use crate::tools::results::sweep_file::{Stat, SuiteRow, Sweep, SweepPoint as Point};
use crate::tools::results::{self, Format, Metric};

use crate::error::{Error, Result};

/// What one input file holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// One or more sweeps (a CSV may hold several labels).
    Sweeps(Vec<Sweep>),
    /// The suite's results table.
    Suite {
        /// The file's label (file stem or `--label`).
        label: String,
        /// Rows with a Mops value.
        rows: Vec<SuiteRow>,
    },
}

impl Input {
    /// The legend labels this input brings (one per sweep, or the suite's).
    pub fn labels_mut(&mut self) -> Vec<&mut String> {
        match self {
            Input::Sweeps(sweeps) => sweeps.iter_mut().map(|s| &mut s.label).collect(),
            Input::Suite { label, .. } => vec![label],
        }
    }
}

/// Two files whose series would carry the same legend label (a sweep's PREFIX.csv and
/// PREFIX.json both say its label) get their file names added, so that neither hides the
/// other's entry. Labels the user gave with --label (`given[i]`) are kept as they are.
pub fn disambiguate(inputs: &mut [Input], files: &[std::path::PathBuf], given: &[bool]) {
    let all: Vec<Vec<String>> = inputs
        .iter_mut()
        .map(|i| i.labels_mut().into_iter().map(|l| l.clone()).collect())
        .collect();
    for (i, input) in inputs.iter_mut().enumerate() {
        if given.get(i).copied().unwrap_or(false) {
            continue;
        }
        let name = files[i]
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for l in input.labels_mut() {
            let clash = all
                .iter()
                .enumerate()
                .any(|(j, ls)| j != i && ls.contains(l));
            if clash {
                l.push_str(&format!(" ({name})"));
            }
        }
    }
}

/// Reads one input file; `label` overrides the label written in the file.
pub fn read(path: &Path, label: Option<&str>) -> Result<Input> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(format!("cannot read {}: {e}", path.display())))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let what = path.display().to_string();
    let header = split_csv(text.lines().next().unwrap_or(""));
    match results::sniff(&text) {
        Format::JsonDocument if text.contains("\"points\"") => {
            let mut s = parse_json(&text, &stem).map_err(|e| at(&what, e))?;
            if let Some(l) = label {
                s.label = l.to_string();
            }
            Ok(Input::Sweeps(vec![s]))
        }
        Format::SweepCsv => {
            let mut sweeps = parse_sweep_csv(&text, &stem).map_err(|e| at(&what, e))?;
            if let Some(l) = label {
                for s in &mut sweeps {
                    s.label = l.to_string();
                }
            }
            Ok(Input::Sweeps(sweeps))
        }
        _ if is_suite_header(&header) => {
            let rows = parse_suite(&text).map_err(|e| at(&what, e))?;
            let label = label.map(str::to_string).unwrap_or(stem);
            Ok(Input::Suite { label, rows })
        }
        _ => {
            let rows = run_rows(&text, &stem).map_err(|e| at(&what, e))?;
            let label = label.map(str::to_string).unwrap_or(stem);
            Ok(Input::Suite { label, rows })
        }
    }
}

/// One run's output (ours, perftest's, the original's) as bars: one per point with a rate,
/// labelled by benchmark and shape (by the file's stem where the output says neither).
fn run_rows(text: &str, stem: &str) -> std::result::Result<Vec<SuiteRow>, String> {
    let points = results::points_of_text(text)?;
    let rows: Vec<SuiteRow> = points
        .iter()
        .filter_map(|p| {
            let mops = p.metrics.get(Metric::Mops)?;
            let k = &p.key;
            let shape = match (k.size, k.postlist) {
                (Some(s), Some(l)) => format!("{s}/{l}"),
                (Some(s), None) => s.to_string(),
                (None, Some(l)) => format!("postlist {l}"),
                (None, None) => String::new(),
            };
            let threads = k.threads.map(|t| format!("x{t}")).unwrap_or_default();
            let label = [
                p.bench.as_str(),
                k.op.as_deref().unwrap_or(""),
                &shape,
                &threads,
            ]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
            let label = if label.is_empty() {
                stem.to_string()
            } else {
                label
            };
            Some(SuiteRow {
                label,
                mops,
                questionable: p.trusted == Some(false),
            })
        })
        .collect();
    if rows.is_empty() {
        return Err(
            "not a sweep CSV or JSON, nor a suite results.csv, and no rate \
             (Mops) in it as a run's output"
                .into(),
        );
    }
    Ok(rows)
}

fn at(what: &str, e: String) -> Error {
    Error::config(format!("{what}: {e}"))
}
