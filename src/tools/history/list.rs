//! `rdma-bench history list`: one line per stored run.

use std::path::PathBuf;

use super::check::fmt;
use super::db::{self, Filter, Run};
use crate::error::Result;
use crate::tools::results::Metric;

/// `rdma-bench history list`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// The history database
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    /// Runs of this tool only
    #[arg(long, value_name = "T")]
    pub tool: Option<String>,
    /// Runs of this host only
    #[arg(long, value_name = "H")]
    pub host: Option<String>,
    /// The last N runs only
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub last: Option<u32>,
}

/// The run's main metric as `mops 1.25`: the first of [`Metric::ALL`] it has.
pub fn main_metric(r: &Run) -> String {
    Metric::ALL
        .iter()
        .find_map(|m| {
            r.metric(m.name())
                .map(|v| format!("{} {}", m.name(), fmt(v)))
        })
        .or_else(|| {
            r.metrics
                .first()
                .map(|m| format!("{} {}", m.name, fmt(m.value)))
        })
        .unwrap_or_else(|| "-".into())
}

/// `yes`, `no (retransmission)` or `-` (nothing said).
pub fn trusted_text(r: &Run) -> String {
    match r.trusted {
        Some(true) => "yes".into(),
        Some(false) if r.questionable.is_empty() => "no".into(),
        Some(false) => format!("no ({})", r.questionable.join(",")),
        None => "-".into(),
    }
}

/// Runs `history list`.
pub fn run(a: &ListArgs) -> Result<()> {
    let conn = db::open(&a.db, false)?;
    let runs = db::runs(
        &conn,
        &Filter {
            tool: a.tool.clone(),
            host: a.host.clone(),
            last: a.last.map(|n| n as usize),
            ..Filter::default()
        },
    )
    .map_err(|e| db::bad(&a.db, e))?;
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            let dev = match (&r.device, r.port) {
                (Some(d), Some(p)) => format!("{d}:{p}"),
                (Some(d), None) => d.clone(),
                _ => "-".into(),
            };
            [
                r.id.to_string(),
                r.time_text.clone(),
                r.host.clone(),
                dev,
                r.tool.clone(),
                r.params_text(),
                main_metric(r),
                trusted_text(r),
            ]
        })
        .collect();
    let header = [
        "id", "time", "host", "device", "tool", "params", "main", "trusted",
    ]
    .map(String::from);
    let mut width = [0usize; 8];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    if rows.is_empty() {
        out += "(no run matches)\n";
    }
    // A reader that stopped early (`| head`) is not an error of ours.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
    Ok(())
}
