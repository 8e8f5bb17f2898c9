//! `history baseline` (names runs) and `history check` (compares runs with a baseline or with
//! the median of earlier runs of the same shape, metric by metric, in the metric's direction).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};

use super::db::{self, Filter, Run};
use crate::error::{Error, Result};

/// `rdma-bench history baseline`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct BaselineArgs {
    /// The history database
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    /// The baseline's name (naming it again replaces its runs)
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The run to name, repeatable [default: every run of the latest `record`]
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<i64>,
}

/// `rdma-bench history check`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    /// The history database
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    /// The run to check, repeatable [default: every run of the latest `record`]
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<i64>,
    /// Compare with this baseline's run of the same host, device, tool and parameters
    #[arg(long, value_name = "NAME", conflicts_with = "median_of")]
    pub baseline: Option<String>,
    /// Compare with the median of the last N earlier trusted runs of the same host, device,
    /// tool and parameters [default: 5, when no --baseline]
    #[arg(long = "median-of", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub median_of: Option<u32>,
    /// A throughput metric (mops, bw_mbps) regresses when lower by more than PCT %
    #[arg(long = "max-drop", value_name = "PCT", default_value_t = 5.0)]
    pub max_drop: f64,
    /// A latency metric (lat_avg_us, lat_median_us, lat_p99_us, lat_p999_us) regresses when
    /// higher by more than PCT %
    #[arg(long = "max-rise", value_name = "PCT", default_value_t = 10.0)]
    pub max_rise: f64,
}

/// Metrics that are stored and listed but not checked: one outlier moves them.
const UNCHECKED: [&str; 2] = ["lat_min_us", "lat_max_us"];

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The runs named by `--run` (each must exist), else the latest `record`'s.
fn chosen(conn: &Connection, a: &Path, ids: &[i64]) -> Result<Vec<i64>> {
    let bad = |e| db::bad(a, e);
    if ids.is_empty() {
        let ids = db::latest_batch(conn).map_err(bad)?;
        if ids.is_empty() {
            return Err(Error::usage(format!("{}: no run recorded", a.display())));
        }
        return Ok(ids);
    }
    let missing = db::missing(conn, ids).map_err(bad)?;
    if let Some(id) = missing.first() {
        return Err(Error::usage(format!(
            "--run {id}: no such run in {}",
            a.display()
        )));
    }
    Ok(ids.to_vec())
}

/// Runs `history baseline`.
pub fn baseline(a: &BaselineArgs) -> Result<()> {
    if a.name.trim().is_empty() {
        return Err(Error::usage("--name '': a baseline needs a name"));
    }
    let mut conn = db::open(&a.db, false)?;
    let ids = chosen(&conn, &a.db, &a.runs)?;
    let fail = |e: rusqlite::Error| Error::config(format!("cannot write {}: {e}", a.db.display()));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let replaced = tx
        .execute("DELETE FROM baselines WHERE name = ?1", [&a.name])
        .map_err(fail)?;
    for id in &ids {
        tx.execute(
            "INSERT INTO baselines (name, run_id, named_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![a.name, id, now()],
        )
        .map_err(fail)?;
    }
    tx.commit().map_err(fail)?;
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    println!(
        "baseline {}: run{} {}{}",
        a.name,
        if ids.len() == 1 { "" } else { "s" },
        list.join(", "),
        if replaced > 0 {
            format!(" (replacing {replaced})")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// The runs baseline `name` names; an unknown name is an error.
pub fn baseline_runs(conn: &Connection, db: &Path, name: &str) -> Result<Vec<Run>> {
    let mut st = conn
        .prepare("SELECT run_id FROM baselines WHERE name = ?1 ORDER BY run_id")
        .map_err(|e| db::bad(db, e))?;
    let ids: Vec<i64> = st
        .query_map([name], |r| r.get(0))
        .and_then(|r| r.collect())
        .map_err(|e| db::bad(db, e))?;
    if ids.is_empty() {
        return Err(Error::usage(format!(
            "--baseline {name}: no such baseline in {} (`history baseline --name {name}` names one)",
            db.display()
        )));
    }
    let f = Filter {
        ids,
        ..Filter::default()
    };
    db::runs(conn, &f).map_err(|e| db::bad(db, e))
}

/// What a run is compared with: the baseline's run, or the earlier runs.
struct Reference {
    runs: Vec<Run>,
}

impl Reference {
    /// The reference value of `metric`: the median over the runs that have it.
    fn value(&self, metric: &str) -> Option<f64> {
        let vals: Vec<f64> = self.runs.iter().filter_map(|r| r.metric(metric)).collect();
        crate::stats::SampleStats::of(&vals).map(|s| s.median)
    }
}

/// Earlier trusted runs of `run`'s shape, the last `n`.
fn earlier(conn: &Connection, run: &Run, n: u32) -> rusqlite::Result<Vec<Run>> {
    let mut st = conn.prepare(
        "SELECT id FROM runs WHERE id < ?1 AND host = ?2 AND device IS ?3 AND tool = ?4 \
         AND params = ?5 AND (trusted IS NULL OR trusted = 1) ORDER BY id DESC LIMIT ?6",
    )?;
    let ids: Vec<i64> = st
        .query_map(
            rusqlite::params![run.id, run.host, run.device, run.tool, run.params, n],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    db::runs(
        conn,
        &Filter {
            ids,
            ..Filter::default()
        },
    )
}

fn describe(r: &Run) -> String {
    let dev = match (&r.device, r.port) {
        (Some(d), Some(p)) => format!(" {d}:{p}"),
        (Some(d), None) => format!(" {d}"),
        _ => String::new(),
    };
    format!(
        "run {} ({} {} on {}{dev})",
        r.id,
        r.tool,
        r.params_text(),
        r.host
    )
}

/// Runs `history check`: one line per regression on stdout, a summary line; exit 6 when any.
pub fn check(a: &CheckArgs) -> Result<()> {
    for (flag, v) in [("--max-drop", a.max_drop), ("--max-rise", a.max_rise)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::usage(format!(
                "{flag} {v}: must be a percentage of 0 or more"
            )));
        }
    }
    let conn = db::open(&a.db, false)?;
    let ids = chosen(&conn, &a.db, &a.runs)?;
    let checked = db::runs(
        &conn,
        &Filter {
            ids,
            ..Filter::default()
        },
    )
    .map_err(|e| db::bad(&a.db, e))?;
    let base = match &a.baseline {
        Some(name) => Some((name.as_str(), baseline_runs(&conn, &a.db, name)?)),
        None => None,
    };
    let n = a.median_of.unwrap_or(5);
    let (mut compared, mut metrics, mut regressions) = (0, 0, 0);
    let mut unmatched = Vec::new();
    for run in &checked {
        let runs: Vec<Run> = match &base {
            Some((_, runs)) => runs
                .iter()
                .filter(|b| b.same_shape(run) && b.id != run.id)
                .take(1)
                .cloned()
                .collect(),
            None => earlier(&conn, run, n).map_err(|e| db::bad(&a.db, e))?,
        };
        if runs.is_empty() {
            unmatched.push(run);
            continue;
        }
        let what = match &base {
            Some((name, _)) => format!("baseline {name} (run {})", runs[0].id),
            None => format!("median of {} earlier run(s)", runs.len()),
        };
        let reference = Reference { runs };
        compared += 1;
        for m in run
            .metrics
            .iter()
            .filter(|m| !UNCHECKED.contains(&m.name.as_str()))
        {
            let Some(b) = reference.value(&m.name) else {
                continue;
            };
            metrics += 1;
            if b == 0.0 {
                continue;
            }
            let change = (m.value - b) / b.abs() * 100.0;
            let regressed = if m.lower_is_better {
                change > a.max_rise
            } else {
                change < -a.max_drop
            };
            if regressed {
                regressions += 1;
                let limit = if m.lower_is_better {
                    format!("+{} %", a.max_rise)
                } else {
                    format!("-{} %", a.max_drop)
                };
                println!(
                    "regression: {}: {} {what}: {} now: {} ({change:+.1} %, limit {limit}){}",
                    describe(run),
                    m.name,
                    fmt(b),
                    fmt(m.value),
                    if run.trusted == Some(false) {
                        " [questionable run]"
                    } else {
                        ""
                    }
                );
            }
        }
    }
    let against = match &base {
        Some((name, _)) => format!("baseline {name}"),
        None => format!("the median of up to {n} earlier runs"),
    };
    if compared == 0 {
        let r = unmatched[0];
        return Err(Error::usage(match &base {
            Some((name, _)) => format!(
                "baseline {name} has no run of the same host, device, tool and parameters as {}",
                describe(r)
            ),
            None => format!(
                "no earlier trusted run of the same host, device, tool and parameters as {}",
                describe(r)
            ),
        }));
    }
    for r in &unmatched {
        eprintln!(
            "note: {} has nothing to compare with in {against}; not checked",
            describe(r)
        );
    }
    println!(
        "check: {compared} run(s), {metrics} metric(s) against {against}: {regressions} regression(s)"
    );
    if regressions > 0 {
        return Err(Error::Finding(format!(
            "{regressions} regression(s) against {against} (beyond -{} % throughput, +{} % latency)",
            a.max_drop, a.max_rise
        )));
    }
    Ok(())
}

/// A value with enough digits to see a few per cent.
pub fn fmt(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e7).contains(&a) {
        format!("{v:.4e}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
