//! `rdma-bench history record DB FILE…`: results our tools wrote, read by the results reader
//! (`crate::tools::results`), stored with where and on what they ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};
use serde_json::Value as Json;

use super::db;
use crate::error::{Error, Result};
use crate::tools::results::sweep_file::{is_suite_header, split_csv};
use crate::tools::results::{self, Format, Point};

/// `rdma-bench history record`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct RecordArgs {
    /// The history database (made on first use)
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    /// Result files: benchmarks' --json output, perftest JSON or output, sweep PREFIX.json or
    /// PREFIX.csv, the suite's results.csv
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The host the results are from [default: this host's name; another name leaves this
    /// host's kernel, rdma-core and device versions out]
    #[arg(long, value_name = "H")]
    pub host: Option<String>,
    /// The device, for results that do not name theirs
    #[arg(long, value_name = "DEV")]
    pub device: Option<String>,
    /// The port, for results that do not name theirs
    #[arg(long, value_name = "N")]
    pub port: Option<u32>,
    /// The tool, for results that do not name theirs (the original's logs)
    #[arg(long, value_name = "T")]
    pub tool: Option<String>,
    /// The results' own time (`2026-05-01 10:00:00`, `2026-05-01T10:00:00Z` or Unix seconds)
    /// [default: none; runs are ordered by when they were recorded]
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
}

/// One run to store.
#[derive(Debug, Clone)]
struct NewRun {
    tool: String,
    params: String,
    source: &'static str,
    file: String,
    point: Point,
}

fn read_file(path: &Path, tool: Option<&str>) -> Result<Vec<NewRun>> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read {shown}: {e}")))?;
    let header = split_csv(text.lines().next().unwrap_or(""));
    let (source, points) = if is_suite_header(&header) {
        ("suite", results::points_of_suite(&text))
    } else {
        let source = match results::sniff(&text) {
            Format::SweepCsv => Some("sweep"),
            Format::JsonDocument if text.contains("\"points\"") => Some("sweep"),
            _ => None,
        };
        let points = results::points_of_text(&text);
        let source = source.or_else(|| {
            points
                .as_ref()
                .ok()
                .and_then(|p| p.first())
                .map(|p| p.source.name())
        });
        (source.unwrap_or("ours"), points)
    };
    let points = points.map_err(|e| Error::usage(format!("{shown}: {e}")))?;
    if points.is_empty() {
        return Err(Error::usage(format!(
            "{shown}: no result in it (a benchmark's --json summary, perftest's output or JSON, \
             a sweep's PREFIX.json/.csv or the suite's results.csv)"
        )));
    }
    points
        .into_iter()
        .map(|p| {
            let tool = match (p.bench.as_str(), tool) {
                ("", Some(t)) => t.to_string(),
                ("", None) => {
                    return Err(Error::usage(format!(
                        "{shown}: the output does not name its benchmark; give --tool"
                    )))
                }
                (b, _) => b.to_string(),
            };
            Ok(NewRun {
                tool,
                params: canonical_params(&p),
                source,
                file: shown.clone(),
                point: p,
            })
        })
        .collect()
}

/// The parameters as JSON text with sorted keys: the key's fields as numbers and strings, the
/// others as numbers where they are integers, so that equal parameters are equal text.
pub fn canonical_params(p: &Point) -> String {
    let mut m: BTreeMap<String, Json> = BTreeMap::new();
    for (k, v) in &p.params {
        let v = match v.trim().parse::<i64>() {
            Ok(n) => Json::from(n),
            Err(_) => Json::from(v.as_str()),
        };
        m.insert(k.replace('-', "_"), v);
    }
    if let Some(op) = &p.key.op {
        m.insert("op".into(), Json::from(op.as_str()));
    }
    for (k, v) in [
        ("size", p.key.size),
        ("postlist", p.key.postlist),
        ("threads", p.key.threads),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), Json::from(v));
        }
    }
    serde_json::to_string(&m).unwrap_or_else(|_| "{}".into())
}

/// This host's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The rdma-core release of the libibverbs this process loaded (`libibverbs.so.1.14.44.0` is
/// rdma-core 44.0).
fn rdma_core_version() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let lib = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find_map(|p| p.rsplit('/').next()?.strip_prefix("libibverbs.so."))?;
    let parts: Vec<&str> = lib.split('.').collect();
    (parts.len() >= 4).then(|| parts[2..].join("."))
}

/// Firmware, driver, kernel and rdma-core versions of this host and `device`, as doctor reads
/// them (None for what cannot be known).
fn versions(local: bool, device: Option<&str>) -> [Option<String>; 4] {
    if !local {
        return [None, None, None, None];
    }
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    let dev = device.filter(|d| Path::new(&format!("/sys/class/infiniband/{d}")).exists());
    let firmware = dev.and_then(crate::tools::doctor::device_firmware);
    let driver = dev.map(|d| crate::tools::doctor::device_driver(d).0);
    [firmware, driver, kernel, rdma_core_version()]
}

/// Parses `--at` (through SQLite's date functions); Unix seconds.
fn parse_at(at: &str) -> Result<f64> {
    let t = at.trim();
    let conn = Connection::open_in_memory()
        .map_err(|e| Error::config(format!("SQLite cannot start: {e}")))?;
    let v: Option<f64> = match t.parse::<f64>() {
        Ok(n) if n.is_finite() => Some(n),
        _ => conn
            .query_row("SELECT unixepoch(?1, 'subsec')", [t], |r| r.get(0))
            .ok()
            .flatten(),
    };
    v.ok_or_else(|| {
        Error::usage(format!(
            "--at {at}: not a time (2026-05-01 10:00:00, 2026-05-01T10:00:00Z or Unix seconds)"
        ))
    })
}

/// Runs `history record`: every file is read first (one bad file records nothing), then all
/// runs go in one transaction.
pub fn run(a: &RecordArgs) -> Result<()> {
    if let Some(h) = a.host.as_deref().filter(|h| h.trim().is_empty()) {
        return Err(Error::usage(format!("--host '{h}': empty host name")));
    }
    let run_at = a.at.as_deref().map(parse_at).transpose()?;
    let mut new = Vec::new();
    for f in &a.files {
        new.extend(read_file(f, a.tool.as_deref())?);
    }
    let mut conn = db::open(&a.db, true)?;
    let here = hostname();
    let host = a.host.clone().unwrap_or_else(|| here.clone());
    let local = host == here;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let fail = |e: rusqlite::Error| Error::config(format!("cannot write {}: {e}", a.db.display()));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let batch: i64 = tx
        .query_row("SELECT coalesce(max(batch), 0) + 1 FROM runs", [], |r| {
            r.get(0)
        })
        .map_err(fail)?;
    let mut ids = Vec::new();
    for n in &new {
        let f = &n.point.facts;
        let device = f.device.clone().or_else(|| a.device.clone());
        let port = f.port.or(a.port);
        let [fw, driver, kernel, rdma_core] = versions(local, device.as_deref());
        let questionable = (!f.questionable.is_empty())
            .then(|| serde_json::to_string(&f.questionable).unwrap_or_default());
        tx.execute(
            "INSERT INTO runs (batch, recorded_at, run_at, host, device, port, firmware, driver, \
             kernel, rdma_core, tool, params, source, file, trusted, questionable) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            rusqlite::params![
                batch,
                now,
                run_at,
                host,
                device,
                port,
                fw,
                driver,
                kernel,
                rdma_core,
                n.tool,
                n.params,
                n.source,
                n.file,
                n.point.trusted,
                questionable
            ],
        )
        .map_err(fail)?;
        let id = tx.last_insert_rowid();
        for (m, v) in n.point.metrics.iter() {
            let better = if m.lower_is_better() {
                "lower"
            } else {
                "higher"
            };
            tx.execute(
                "INSERT INTO metrics (run_id, name, value, unit, better) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![id, m.name(), v, m.unit(), better],
            )
            .map_err(fail)?;
        }
        for (port, name, delta) in &f.counters {
            tx.execute(
                "INSERT OR REPLACE INTO counters (run_id, port, name, delta) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![id, port, name, delta],
            )
            .map_err(fail)?;
        }
        ids.push(id);
    }
    tx.commit().map_err(fail)?;
    let span = match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if a != b => format!("runs {a}..{b}"),
        (Some(a), _) => format!("run {a}"),
        _ => "no run".into(),
    };
    println!(
        "recorded {} ({} from {} file{}) into {} on host {host}",
        span,
        ids.len(),
        a.files.len(),
        if a.files.len() == 1 { "" } else { "s" },
        a.db.display()
    );
    Ok(())
}
