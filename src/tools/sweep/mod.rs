//! `rdma-bench sweep`: a command run over a grid of flag values, N repetitions per point in
//! alternating order, each run's output read by the results reader; per point the median,
//! min/max and 95 % confidence interval, as CSV and JSON. Resumable: the runs already in
//! `PREFIX.runs.csv` are not made again.

mod grid;
mod runlog;
mod summary;

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub use grid::Param;
pub use summary::{align, num};

use crate::control;
use crate::error::{Error, Result};
use crate::tools::child;
use crate::tools::results::{self, Metric};
use runlog::{Run, RunLog};
use summary::Shape;

const AFTER_HELP: &str = "\
Examples:
  rdma-bench sweep --param size=32,64,128 --param postlist=1..16 --reps 3 --out target/sw \\
      -- bench_scripts/run-local.sh rw-tput-sender --size {size} --postlist {postlist} --duration 2 --json
  rdma-bench sweep --param size=8..4096 --metric lat_p99_us -- bench_scripts/run-local.sh write-lat -s {size} -n 1000

VALUES: `1,2,4`; `1..64` doubles from the start (1, 2, 4, …, 64); `0..100+25` steps (0, 25, …, 100);
items can be mixed (`1..8,12,16`). Every --param must appear as {name} in the command, and every
{name} must be a --param.

Each run is the command (no shell) with its placeholders filled in and SWEEP_REP (the repetition)
and SWEEP_POINT (the point's index in the grid) in its environment. Its stdout and stderr are read
as the results reader reads files: our --json lines (preferred) or text summary, perftest's table
or JSON, the original suite's lines. Repetition r runs the points forward when r is even and
backward when odd, so that drift over time does not line up with the grid. A run that exits
non-zero or prints no value of the metric is recorded with ok=0 and reported; the sweep fails only
when every run failed.

Files (PREFIX from --out):
  PREFIX.runs.csv   <params>,rep,ok,metric,unit,value,seconds — one row per run, written as it
                    ends; the resume log: a rerun of the same command with the same --out skips
                    the runs with ok=1 (another command is refused: PREFIX.runs.cmd names it).
  PREFIX.runs.jsonl every metric of each ok run (the resume log's companion).
  PREFIX.csv        label,<params>,metric,unit,n,median,mean,min,max,ci95_low,ci95_high
  PREFIX.json       {label, command, params, metric, reps, points: [{params, metrics: {NAME:
                    {unit, n, median, mean, min, max, ci95_low, ci95_high, values}}}]}
CI: the 95 % confidence interval of the mean (Student's t). Ctrl-C (SIGINT or SIGTERM) stops the
running command (SIGINT, SIGKILL 3 s later), keeps what was measured (the files are written) and
exits 130; rerun to resume.";

/// `rdma-bench sweep`'s flags.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP)]
pub struct SweepArgs {
    /// A swept flag: NAME=VALUES (repeatable; the grid is the cartesian product, the first
    /// --param outermost)
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub params: Vec<String>,
    /// Runs per point
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Prefix of the output files (PREFIX.runs.csv, PREFIX.csv, PREFIX.json)
    #[arg(long, value_name = "PREFIX", default_value = "sweep")]
    pub out: String,
    /// The value each run is judged by: mops, bw_mbps, lat_avg_us, lat_median_us, lat_p99_us,
    /// lat_p999_us, lat_min_us, lat_max_us [default: mops when the first run prints it, else the
    /// first metric it prints]
    #[arg(long)]
    pub metric: Option<String>,
    /// Name of this sweep in PREFIX.csv and PREFIX.json [default: PREFIX's file name]
    #[arg(long)]
    pub label: Option<String>,
    /// Seconds one run may take; a run still going then is stopped (SIGINT, SIGKILL 3 s later)
    /// and recorded as failed [default: no limit]
    #[arg(long, value_name = "SECS", value_parser = crate::framework::positive_secs)]
    pub run_timeout: Option<f64>,
    /// The command and its arguments, with {name} placeholders
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Everything the loop needs, checked.
struct Plan {
    params: Vec<Param>,
    names: Vec<String>,
    points: Vec<Vec<String>>,
    label: String,
    metric: Option<Metric>,
}

fn plan(a: &SweepArgs) -> Result<Plan> {
    if a.reps == 0 {
        return Err(Error::usage("--reps must be at least 1"));
    }
    let params = a
        .params
        .iter()
        .map(|p| Param::parse(p))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(Error::config(format!("--param {n} is given twice")));
        }
        if ["label", "rep", "ok", "metric", "unit", "value", "seconds"].contains(&n.as_str()) {
            return Err(Error::config(format!(
                "--param {n}: the name is a column of the sweep's files; rename it"
            )));
        }
    }
    grid::check_placeholders(&a.command, &params)?;
    let metric = match &a.metric {
        Some(m) => Some(Metric::parse(m).ok_or_else(|| {
            Error::config(format!(
                "--metric {m}: not a metric (one of {})",
                Metric::names()
            ))
        })?),
        None => None,
    };
    let label = a.label.clone().unwrap_or_else(|| {
        std::path::Path::new(&a.out)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| a.out.clone())
    });
    if label.contains([',', '"', '\n']) {
        return Err(Error::config(
            "--label cannot contain ',', '\"' or a newline",
        ));
    }
    Ok(Plan {
        points: grid::points(&params),
        params,
        names,
        label,
        metric,
    })
}

/// The point's description for messages: `size=32 postlist=4`.
fn describe(names: &[String], values: &[String]) -> String {
    if names.is_empty() {
        return "the command".into();
    }
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last non-empty line of a run's output, for a failure's report.
fn last_line(output: &str) -> &str {
    output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .trim()
}

/// Runs `rdma-bench sweep`.
pub fn run(a: SweepArgs) -> Result<()> {
    let p = plan(&a)?;
    if let Some(dir) = std::path::Path::new(&a.out).parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::config(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    let (mut log, mut runs) = RunLog::open(&a.out, &p.names, &a.command)?;
    // The metric: --metric, else the one the log's ok runs have, else the first ok run's
    // choice (a failed run's row names the metric it looked for, which may be a guess).
    let mut metric = p.metric;
    if let Some(first) = runs.iter().find(|r| r.ok) {
        match metric {
            Some(m) if m != first.metric => {
                return Err(Error::config(format!(
                "{}.runs.csv holds {} runs; this sweep asks for --metric {} (give another --out)",
                a.out,
                first.metric.name(),
                m.name()
            )))
            }
            _ => metric = Some(first.metric),
        }
    }
    let attention = control::install_stop_signals()?;
    let schedule: Vec<(usize, usize)> = grid::schedule(p.points.len(), a.reps)
        .into_iter()
        .filter(|&(pt, r)| {
            !runs
                .iter()
                .any(|x| x.ok && x.rep == r && x.values == p.points[pt])
        })
        .collect();
    let skipped = p.points.len() * a.reps - schedule.len();
    if skipped > 0 {
        eprintln!(
            "sweep: {skipped} runs already in {}.runs.csv, {} to go",
            a.out,
            schedule.len()
        );
    }
    let bar = progress(schedule.len() as u64);
    let say = |msg: String| match &bar {
        Some(b) => b.println(msg),
        None => eprintln!("{msg}"),
    };
    let mut failed = 0usize;
    let mut made = 0usize;
    let mut last_failure = String::new();
    let mut interrupted = false;
    for (pt, rep) in schedule {
        if attention.stop_requested() {
            interrupted = true;
            break;
        }
        let values = &p.points[pt];
        let what = describe(&p.names, values);
        if let Some(b) = &bar {
            b.set_message(format!("{what} rep {rep}"));
        }
        let argv = grid::substitute(&a.command, &p.params, values);
        let env = [
            ("SWEEP_REP", rep.to_string()),
            ("SWEEP_POINT", pt.to_string()),
        ];
        let limit = a.run_timeout.map(std::time::Duration::from_secs_f64);
        let out = child::run(&argv, &env, attention, limit)?;
        if out.interrupted {
            interrupted = true;
            break;
        }
        let measured = results::points(&results::parse(&out.output));
        let point = measured.iter().find(|x| match metric {
            Some(m) => x.metrics.get(m).is_some(),
            None => !x.metrics.is_empty(),
        });
        let m = metric
            .or_else(|| point.and_then(|x| x.metrics.default_metric()))
            .unwrap_or(Metric::Mops);
        let value = point.and_then(|x| x.metrics.get(m));
        let ok = out.code == Some(0) && value.is_some() && !out.timed_out;
        if ok {
            metric = Some(m);
        }
        let run = Run {
            values: values.clone(),
            rep,
            ok,
            metric: m,
            value: if ok { value } else { None },
            seconds: out.seconds,
            all: point.filter(|_| ok).map(|x| x.metrics).unwrap_or_default(),
            bench: point.map(|x| x.bench.clone()).unwrap_or_default(),
            op: point.and_then(|x| x.key.op.clone()),
            trusted: point.and_then(|x| x.trusted),
        };
        log.append(&run)?;
        runs.push(run);
        made += 1;
        if !ok {
            failed += 1;
            let why = match out.code {
                _ if out.timed_out => format!(
                    "still running after --run-timeout {}",
                    a.run_timeout.unwrap_or_default()
                ),
                Some(0) => format!("printed no {}", m.name()),
                Some(c) => format!("exit code {c}"),
                None => "killed by a signal".into(),
            };
            last_failure = format!("{why}; last line: {}", last_line(&out.output));
            say(format!("sweep: {what} rep {rep} failed ({last_failure})"));
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let metric = metric.unwrap_or(Metric::Mops);
    let shape = Shape {
        label: &p.label,
        command: &a.command,
        names: &p.names,
        points: &p.points,
        metric,
        reps: a.reps,
    };
    let res = summary::summarize(&shape, &runs);
    write(&format!("{}.csv", a.out), &summary::csv(&shape, &res))?;
    write(&format!("{}.json", a.out), &summary::json(&shape, &res))?;
    print!("{}", summary::table(&shape, &res));
    if interrupted {
        return Err(Error::Stopped(format!(
            "stopped: {made} runs made, the files keep them; run the same command to resume"
        )));
    }
    if made > 0 && failed == made && !runs.iter().any(|r| r.ok) {
        return Err(Error::config(format!(
            "every run failed (the last: {last_failure})"
        )));
    }
    if failed > 0 {
        eprintln!(
            "sweep: {failed} of {made} runs failed (ok=0 in {}.runs.csv)",
            a.out
        );
    }
    Ok(())
}

fn write(path: &str, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::config(format!("cannot write {path}: {e}")))
}

/// A progress bar with ETA on stderr, when stderr is a terminal.
fn progress(len: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() || len == 0 {
        return None;
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} runs, ETA {eta} — {msg}")
    {
        bar.set_style(style);
    }
    Some(bar)
}
