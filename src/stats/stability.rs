//! Stability mode (`--stats-interval SECS --stats-file FILE.csv`): every interval, one CSV row per
//! counting thread with its rate over that interval, flushed as it is written so that a run left
//! overnight and then killed keeps every row; at the end, a summary that flags drift.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::report::Counters;
use super::sample::{drift_first_last_tenth, SampleStats};
use super::JsonObject;
use crate::error::{Error, Result};

/// The CSV's header: wall-clock time (for lining rows up with other logs), seconds since the
/// thread's first operation, the thread's global id, the interval's length, the thread's total
/// operations so far, and its rate over the interval.
pub const STABILITY_CSV_HEADER: &str = "unix_time_s,elapsed_s,thread,interval_s,ops,mops";

/// A change of the total rate from the first tenth of the run to its last tenth beyond this
/// (relative) is flagged as drift.
pub const DRIFT_LIMIT: f64 = 0.05;
/// A coefficient of variation of the per-interval total rate beyond this is flagged as unstable.
pub const CV_LIMIT: f64 = 0.10;

/// The per-interval rates of one run, written as they come.
pub struct StabilityLog {
    out: BufWriter<File>,
    path: PathBuf,
    interval_s: f64,
    /// Wall-clock seconds at the counters' epoch.
    unix_at_epoch: f64,
    last_ops: Vec<u64>,
    last_t: Vec<f64>,
    /// Per thread: its rate (Mops) in each interval it was running.
    per_thread: Vec<Vec<f64>>,
    /// The sum of the threads' rates, per interval.
    totals: Vec<f64>,
    first_id: usize,
    write_error: Option<std::io::Error>,
}

impl StabilityLog {
    /// Creates (truncates) `path` and writes the header. `path` is locked while the run writes
    /// it: a second process of the same run given the same flags (both sides of ud-sender,
    /// run-local.sh's way) writes `NAME.<role>.csv` beside it instead of interleaving rows.
    pub fn create(
        path: &Path,
        interval_s: f64,
        counters: &Arc<Counters>,
        first_id: usize,
        role: &str,
    ) -> Result<Self> {
        let fail = |p: &Path, e: std::io::Error| {
            Error::config(format!(
                "--stats-file {}: cannot write it: {e}",
                p.display()
            ))
        };
        let (file, path) = match open_locked(path).map_err(|e| fail(path, e))? {
            Some(f) => (f, path.to_owned()),
            None => {
                let alt = beside(path, &role.to_lowercase());
                let f = open_locked(&alt)
                    .map_err(|e| fail(&alt, e))?
                    .ok_or_else(|| {
                        Error::config(format!(
                            "--stats-file {} and {} are both being written by other processes",
                            path.display(),
                            alt.display()
                        ))
                    })?;
                println!(
                    "main: stability: {} is written by another process of this run; this one writes {}",
                    path.display(),
                    alt.display()
                );
                (f, alt)
            }
        };
        let mut out = BufWriter::new(file);
        writeln!(out, "{STABILITY_CSV_HEADER}")
            .and_then(|()| out.flush())
            .map_err(|e| fail(&path, e))?;
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let n = counters.len();
        Ok(StabilityLog {
            out,
            path,
            interval_s,
            unix_at_epoch: wall - counters.now(),
            last_ops: vec![0; n],
            last_t: vec![0.0; n],
            per_thread: vec![Vec::new(); n],
            totals: Vec::new(),
            first_id,
            write_error: None,
        })
    }

    /// One row per started thread: its rate since the previous row (or since it started).
    pub fn tick(&mut self, counters: &Counters) {
        let now = counters.now();
        let mut total = 0.0;
        let mut any = false;
        for t in 0..counters.len() {
            let Some(started) = counters.started_at(t) else {
                continue;
            };
            let since = if self.last_t[t] > 0.0 {
                self.last_t[t]
            } else {
                started
            };
            // A thread that finished (--iters) has no rate after its end: its last interval
            // ends there, and later ones have no row rather than a zero.
            let end = counters.stopped_at(t).map_or(now, |s| s.min(now));
            let dt = end - since;
            if dt <= 0.0 {
                continue;
            }
            let ops = counters.get(t);
            let mops = ops.saturating_sub(self.last_ops[t]) as f64 / dt / 1e6;
            let row = writeln!(
                self.out,
                "{:.3},{:.3},{},{:.3},{},{:.6}",
                self.unix_at_epoch + end,
                end - started,
                self.first_id + t,
                dt,
                ops,
                mops
            );
            if let Err(e) = row {
                self.write_error.get_or_insert(e);
            }
            self.per_thread[t].push(mops);
            self.last_ops[t] = ops;
            self.last_t[t] = end;
            total += mops;
            any = true;
        }
        if any {
            self.totals.push(total);
        }
        if let Err(e) = self.out.flush() {
            self.write_error.get_or_insert(e);
        }
    }

    /// The end-of-run summary: lines for stdout and, with `json`, one JSON object.
    pub fn summary(&mut self, json_base: JsonObject, json: bool) -> String {
        let _ = self.out.flush();
        let mut text = String::new();
        let file = self.path.display();
        if let Some(e) = &self.write_error {
            text.push_str(&format!("main: stability: writing {file} failed: {e}\n"));
        }
        let total = Verdict::of(&self.totals);
        text.push_str(&format!(
            "main: stability: {} intervals of {} s in {file}; total {}\n",
            self.totals.len(),
            self.interval_s,
            total.describe()
        ));
        if self.per_thread.iter().filter(|s| !s.is_empty()).count() > 1 {
            for (t, series) in self.per_thread.iter().enumerate() {
                if !series.is_empty() {
                    let v = Verdict::of(series);
                    let id = self.first_id + t;
                    text.push_str(&format!("main: stability: thread {id}: {}\n", v.describe()));
                }
            }
        }
        if json {
            let o = json_base
                .bool("stability", true)
                .int("intervals", self.totals.len() as u64)
                .num("interval_s", self.interval_s)
                .opt_num("median_mops", total.stats.map(|s| s.median))
                .opt_num("cv", total.stats.map(|s| s.cv()))
                .opt_num("drift", total.drift)
                .bool("flagged", total.flagged());
            text.push_str(&o.finish());
            text.push('\n');
        }
        text
    }
}

/// Opens `path` for writing without truncating it and takes its lock: `None` when another
/// process holds it; else the file, emptied.
fn open_locked(path: &Path) -> std::io::Result<Option<File>> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    match f.try_lock() {
        Ok(()) => {
            f.set_len(0)?;
            Ok(Some(f))
        }
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// `dir/name.csv` → `dir/name.<tag>.csv`.
fn beside(path: &Path, tag: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{tag}"),
    };
    path.with_file_name(name)
}

/// What one rate series says about stability.
struct Verdict {
    stats: Option<SampleStats>,
    drift: Option<f64>,
}

impl Verdict {
    fn of(series: &[f64]) -> Verdict {
        Verdict {
            stats: SampleStats::of(series),
            drift: drift_first_last_tenth(series),
        }
    }

    fn flagged(&self) -> bool {
        let unstable = self.stats.is_some_and(|s| s.cv() > CV_LIMIT);
        unstable || self.drift.is_some_and(|d| d.abs() > DRIFT_LIMIT)
    }

    fn describe(&self) -> String {
        let Some(s) = self.stats else {
            return "no complete interval: nothing to judge".into();
        };
        let drift = match self.drift {
            Some(d) => format!("first→last tenth {:+.1} %", d * 100.0),
            None => "first→last tenth n/a (fewer than 10 intervals)".into(),
        };
        let verdict = match (self.stats.is_some_and(|s| s.cv() > CV_LIMIT), self.drift) {
            (_, Some(d)) if d.abs() > DRIFT_LIMIT => format!(
                "DRIFT (beyond ±{:.0} %: compare the link's counters and the hosts' load over the run)",
                DRIFT_LIMIT * 100.0
            ),
            (true, _) => format!("UNSTABLE (CV beyond {:.0} %)", CV_LIMIT * 100.0),
            _ => "stable".into(),
        };
        format!(
            "median {:.4} Mops (min {:.4}, max {:.4}), CV {:.1} %, {drift}: {verdict}",
            s.median,
            s.min,
            s.max,
            s.cv() * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_of_one_file_goes_beside_it() {
        let dir = std::env::temp_dir().join(format!("rdma-bench-stab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rates.csv");
        let counters = Counters::new(1);
        let first = StabilityLog::create(&path, 1.0, &counters, 0, "Server").unwrap();
        let second = StabilityLog::create(&path, 1.0, &counters, 0, "Client").unwrap();
        assert_eq!(first.path, path);
        assert_eq!(second.path, dir.join("rates.client.csv"));
        drop(first);
        // The lock went with the first writer: the name is free again (and emptied).
        let third = StabilityLog::create(&path, 1.0, &counters, 0, "Client").unwrap();
        assert_eq!(third.path, path);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{STABILITY_CSV_HEADER}\n")
        );
        drop((second, third));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
