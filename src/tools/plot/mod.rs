//! `rdma-bench plot`: SVG (and, through rsvg-convert, PNG) charts of sweeps and of the suite's
//! results. `input` reads the files, `chart` (with `pick`'s defaults) decides what to
//! draw, `draw` draws it with plotters.

pub mod chart;
pub mod draw;
pub mod heatmap;
pub mod input;
pub mod pick;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use chart::{Chart, Choice, ErrSpan, Kind};

const AFTER: &str = "\
Inputs: a sweep's PREFIX.json or PREFIX.csv (rdma-bench sweep), or the suite's results.csv \
(target/suite/results.csv, drawn as bars of Mops per row). Several files overlay as series, \
labelled by the file's label field (else its name) or by --label, one per file in order.

Auto kind: results.csv -> bars; x `size` (or any x whose values double: postlist=1..64) -> \
rate/bandwidth on a log2 axis; x threads, \
QPs, clients, workers... -> scaling on a linear axis; latency metrics (lat_*) -> one line per \
percentile (median, p99, p99.9) per file. Parameters of the sweep other than x make one series \
per combination. Error bars span min..max of the repetitions (--err ci: the 95 % confidence \
interval); none when a point has one repetition.

Metrics: mops, bw_mbps, lat_avg_us, lat_median_us, lat_p99_us, lat_p999_us, lat_min_us, \
lat_max_us. PNG output runs rsvg-convert (Debian: apt-get install librsvg2-bin) on the SVG.
Bad input (missing file, unknown metric, no points, x param absent) exits 2 with one line.

Examples:
  rdma-bench plot target/sweep/write.json -o write.svg
  rdma-bench plot ours.json perftest.json c-suite.json --metric mops -o overlay.svg
  rdma-bench plot lat.json --kind latency --err ci
  rdma-bench plot target/suite/results.csv -o suite.svg";

/// `rdma-bench plot`'s flags.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER)]
pub struct PlotArgs {
    /// Sweep JSON/CSV files, or the suite's results.csv; several files overlay as series
    #[arg(required_unless_present = "trend", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Draw one --metric of a history database over time instead (rdma-bench history): one
    /// series per host, device, tool and parameters, baselines as flat lines
    #[arg(long, value_name = "DB", conflicts_with_all = ["files", "x", "kind", "labels", "log_x", "linear_x"])]
    pub trend: Option<PathBuf>,
    /// With --trend: runs of this tool only
    #[arg(long, value_name = "T", requires = "trend")]
    pub tool: Option<String>,
    /// With --trend: runs of this host only
    #[arg(long, value_name = "H", requires = "trend")]
    pub host: Option<String>,
    /// Output file, ending in .svg or .png [default: the first FILE with .svg]
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Sweep parameter on the x axis [default: size, else a count such as threads, else the
    /// only parameter]
    #[arg(long, value_name = "PARAM")]
    pub x: Option<String>,
    /// Metric on the y axis, repeatable (one series each) [default: the sweep's metric; for
    /// latency the percentiles present]
    #[arg(long = "metric", value_name = "M")]
    pub metrics: Vec<String>,
    /// Chart kind
    #[arg(long, value_enum, default_value = "auto")]
    pub kind: Kind,
    /// Title on top [default: what is plotted against what, and the files' labels]
    #[arg(long, value_name = "T")]
    pub title: Option<String>,
    /// Legend label of the files, repeatable: the first --label names the first FILE, ...
    #[arg(long = "label", value_name = "L")]
    pub labels: Vec<String>,
    /// What the error bars span
    #[arg(long, value_enum, default_value = "minmax")]
    pub err: ErrSpan,
    /// Log2 x axis [default outside scaling charts for size-like x, or x values that double
    /// (1, 2, 4, … spanning at least 8x)]
    #[arg(long, conflicts_with = "linear_x")]
    pub log_x: bool,
    /// Linear x axis
    #[arg(long)]
    pub linear_x: bool,
}

/// Runs `rdma-bench plot`. Bad input is a usage error (exit 2); a failure to write the output
/// is an error of its own (exit 1).
pub fn run(a: PlotArgs) -> Result<()> {
    let (chart, out) = match &a.trend {
        Some(db) => trend(&a, db)?,
        None => prepare(&a).map_err(|e| Error::usage(e.to_string()))?,
    };
    let svg = draw::svg(&chart)?;
    write(&out, &svg)?;
    let n = match &chart {
        Chart::Lines(l) => l.series.len(),
        Chart::Bars(b) => b.series.len(),
    };
    println!("wrote {} ({n} series)", out.display());
    Ok(())
}

/// `--trend DB`: the chart of one metric over the history's runs.
fn trend(a: &PlotArgs, db: &Path) -> Result<(Chart, PathBuf)> {
    let metric = match a.metrics.as_slice() {
        [m] => m,
        [] => {
            return Err(Error::usage(
                "--trend needs a --metric (mops, bw_mbps, lat_p99_us, …)",
            ))
        }
        _ => return Err(Error::usage("--trend draws one --metric")),
    };
    let out = a.output.clone().unwrap_or_else(|| db.with_extension("svg"));
    check_output(&out).map_err(|e| Error::usage(e.to_string()))?;
    let lines = crate::tools::history::trend::chart(
        db,
        metric,
        a.tool.as_deref(),
        a.host.as_deref(),
        a.title.as_deref(),
    )?;
    Ok((Chart::Lines(lines), out))
}

/// Refuses an output that is neither .svg nor (with rsvg-convert) .png.
fn check_output(out: &Path) -> Result<()> {
    match out.extension().and_then(|e| e.to_str()) {
        Some("svg") => Ok(()),
        Some("png") if find_on_path("rsvg-convert").is_some() => Ok(()),
        Some("png") => Err(Error::config(
            "PNG output needs rsvg-convert on PATH (Debian/Ubuntu: apt-get install \
             librsvg2-bin); or write SVG with -o FILE.svg",
        )),
        _ => Err(Error::config(format!(
            "output {} must end in .svg or .png",
            out.display()
        ))),
    }
}

/// Checks the flags, reads the files and resolves the chart; every error is the user's input.
pub fn prepare(a: &PlotArgs) -> Result<(Chart, PathBuf)> {
    if a.labels.len() > a.files.len() {
        return Err(Error::config(format!(
            "{} --label for {} files",
            a.labels.len(),
            a.files.len()
        )));
    }
    let out = match &a.output {
        Some(o) => o.clone(),
        None => a.files[0].with_extension("svg"),
    };
    check_output(&out)?;
    let mut inputs = Vec::new();
    for (i, f) in a.files.iter().enumerate() {
        inputs.push(input::read(f, a.labels.get(i).map(String::as_str))?);
    }
    let given: Vec<bool> = (0..a.files.len()).map(|i| i < a.labels.len()).collect();
    input::disambiguate(&mut inputs, &a.files, &given);
    let choice = Choice {
        kind: a.kind,
        x: a.x.clone(),
        metrics: a.metrics.clone(),
        err: a.err,
        log_x: match (a.log_x, a.linear_x) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        title: a.title.clone(),
    };
    Ok((chart::build(inputs, &choice)?, out))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn write(out: &Path, svg: &str) -> Result<()> {
    let fail = |e: std::io::Error| Error::config(format!("cannot write {}: {e}", out.display()));
    if out.extension().and_then(|e| e.to_str()) != Some("png") {
        return std::fs::write(out, svg).map_err(fail);
    }
    let mut child = Command::new("rsvg-convert")
        .args(["--format", "png", "--output"])
        .arg(out)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| Error::config(format!("cannot run rsvg-convert: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(svg.as_bytes()).map_err(fail)?;
    }
    let status = child.wait().map_err(fail)?;
    if !status.success() || !out.is_file() {
        return Err(Error::config(format!(
            "rsvg-convert failed ({status}) writing {}",
            out.display()
        )));
    }
    Ok(())
}
