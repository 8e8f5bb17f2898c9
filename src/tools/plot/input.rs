//! The three inputs `rdma-bench plot` reads, into one model: a sweep's JSON (`PREFIX.json`), a
//! sweep's long-form CSV (`PREFIX.csv`) and the suite's `results.csv`, all read by
//! [`crate::tools::results`]'s one reader of them.

use std::path::Path;

use crate::tools::results::sweep_file::{
    is_suite_header, parse_json, parse_suite, parse_sweep_csv, split_csv,
};
pub use crate::tools::results::sweep_file::{Stat, SuiteRow, Sweep, SweepPoint as Point};

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

/// Reads one input file; `label` overrides the label written in the file.
pub fn read(path: &Path, label: Option<&str>) -> Result<Input> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(format!("cannot read {}: {e}", path.display())))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let what = path.display().to_string();
    if text.trim_start().starts_with('{') {
        let mut s = parse_json(&text, &stem).map_err(|e| at(&what, e))?;
        if let Some(l) = label {
            s.label = l.to_string();
        }
        return Ok(Input::Sweeps(vec![s]));
    }
    let header = split_csv(text.lines().next().unwrap_or(""));
    if is_suite_header(&header) {
        let rows = parse_suite(&text).map_err(|e| at(&what, e))?;
        let label = label.map(str::to_string).unwrap_or(stem);
        return Ok(Input::Suite { label, rows });
    }
    let mut sweeps = parse_sweep_csv(&text, &stem).map_err(|e| at(&what, e))?;
    if let Some(l) = label {
        for s in &mut sweeps {
            s.label = l.to_string();
        }
    }
    Ok(Input::Sweeps(sweeps))
}

fn at(what: &str, e: String) -> Error {
    Error::config(format!("{what}: {e}"))
}
