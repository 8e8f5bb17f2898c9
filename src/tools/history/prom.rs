//! `rdma-bench history prom`: the latest run per (host, device, tool, parameters) as a
//! Prometheus node_exporter textfile-collector file, written atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::db::{self, Filter, Run};
use crate::error::{Error, Result};

/// `rdma-bench history prom`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PromArgs {
    /// The history database
    #[arg(value_name = "DB")]
    pub db: PathBuf,
    /// The file to write (e.g. /var/lib/prometheus/node-exporter/rdma_bench.prom)
    #[arg(value_name = "FILE")]
    pub out: PathBuf,
    /// Only these runs, repeatable [default: every run; the latest of each shape is written]
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<i64>,
}

/// One metric family: name, help, samples (labels, value).
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Vec<(String, String)>, f64)>,
}

/// MB/s (2^20 bytes, perftest's) to Gb/s (10^9 bits).
const GBPS_PER_MBPS: f64 = 1_048_576.0 * 8.0 / 1e9;

/// A label value escaped as the text format wants: backslash, double quote, newline.
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A parameter name as a label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not one of ours, not `__…`).
fn label_name(k: &str) -> String {
    let mut s: String = k
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || s.starts_with("__") {
        s = format!("param_{s}");
    }
    if ["host", "device", "port", "tool", "stat", "counter"].contains(&s.as_str()) {
        s = format!("param_{s}");
    }
    s
}

fn labels(r: &Run) -> Vec<(String, String)> {
    let mut l = vec![
        ("host".to_string(), r.host.clone()),
        ("device".to_string(), r.device.clone().unwrap_or_default()),
        (
            "port".to_string(),
            r.port.map(|p| p.to_string()).unwrap_or_default(),
        ),
        ("tool".to_string(), r.tool.clone()),
    ];
    let params: serde_json::Value = serde_json::from_str(&r.params).unwrap_or_default();
    if let Some(o) = params.as_object() {
        for (k, v) in o {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            l.push((label_name(k), v));
        }
    }
    l
}

/// The latest run of each (host, device, tool, parameters) among `runs`.
fn latest(runs: &[Run]) -> Vec<&Run> {
    let mut by: BTreeMap<(&str, Option<&str>, &str, &str), &Run> = BTreeMap::new();
    for r in runs {
        let k = (
            r.host.as_str(),
            r.device.as_deref(),
            r.tool.as_str(),
            r.params.as_str(),
        );
        if by.get(&k).is_none_or(|o| (o.time, o.id) < (r.time, r.id)) {
            by.insert(k, r);
        }
    }
    by.into_values().collect()
}

/// The text of the file: `# HELP`, `# TYPE … gauge`, then the samples of each family.
pub fn render(runs: &[Run]) -> String {
    let fam = |name, help| Family {
        name,
        help,
        samples: Vec::new(),
    };
    let mut mops = fam(
        "rdma_bench_mops",
        "Operation rate of the latest run, millions per second (rdma-bench history).",
    );
    let mut gbps = fam(
        "rdma_bench_gbps",
        "Bandwidth of the latest run, Gb/s (10^9 bits per second).",
    );
    let mut lat = fam(
        "rdma_bench_latency_seconds",
        "Latency of the latest run, seconds; stat says which (avg, median, p99, p999, min, max).",
    );
    let mut trusted = fam(
        "rdma_bench_trusted",
        "1 when the fabric's counters vouch for the latest run, 0 when they made it questionable.",
    );
    let mut counters = fam(
        // Not rdma_bench_counter_delta: promtool's lint refuses a type name in a metric name.
        "rdma_bench_port_delta",
        "Change of a port counter (label counter) over the latest run.",
    );
    let mut time = fam(
        "rdma_bench_run_timestamp_seconds",
        "When the latest run was measured (else recorded), Unix seconds.",
    );
    for r in latest(runs) {
        let l = labels(r);
        for m in &r.metrics {
            match m.name.as_str() {
                "mops" => mops.samples.push((l.clone(), m.value)),
                "bw_mbps" => gbps.samples.push((l.clone(), m.value * GBPS_PER_MBPS)),
                name => {
                    if let Some(stat) = name
                        .strip_prefix("lat_")
                        .and_then(|s| s.strip_suffix("_us"))
                    {
                        let mut l = l.clone();
                        l.push(("stat".into(), stat.to_string()));
                        lat.samples.push((l, m.value / 1e6));
                    }
                }
            }
        }
        if let Some(t) = r.trusted {
            trusted.samples.push((l.clone(), f64::from(u8::from(t))));
        }
        for (port, name, delta) in &r.counters {
            let mut l = l.clone();
            // The counter's own port (a run may watch several).
            if let Some((d, p)) = port.rsplit_once(':') {
                l[1].1 = d.to_string();
                l[2].1 = p.to_string();
            }
            l.push(("counter".into(), name.clone()));
            counters.samples.push((l, *delta));
        }
        time.samples.push((l, r.time));
    }
    let mut out = String::new();
    for f in [mops, gbps, lat, trusted, counters, time] {
        if f.samples.is_empty() {
            continue;
        }
        out += &format!("# HELP {} {}\n# TYPE {} gauge\n", f.name, f.help, f.name);
        for (l, v) in f.samples {
            let l: Vec<String> = l
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            out += &format!("{}{{{}}} {v}\n", f.name, l.join(","));
        }
    }
    out
}

/// Writes the latest run per (host, device, tool, parameters) of `runs` to `path` in the
/// textfile-collector format: a temporary file in the same directory, renamed over `path`, so a
/// scrape never sees half a file.
pub fn write_prom(path: &Path, runs: &[Run]) -> Result<()> {
    let shown = path.display();
    let name = path
        .file_name()
        .ok_or_else(|| Error::usage(format!("{shown}: not a file name")))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let tmp_name = format!(".{}.tmp.{}", name.to_string_lossy(), std::process::id());
    let tmp = dir.map_or_else(|| PathBuf::from(&tmp_name), |d| d.join(&tmp_name));
    let fail = |e: std::io::Error| Error::config(format!("cannot write {shown}: {e}"));
    std::fs::write(&tmp, render(runs)).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// Runs `history prom`.
pub fn run(a: &PromArgs) -> Result<()> {
    let conn = db::open(&a.db, false)?;
    if let Some(id) = db::missing(&conn, &a.runs)
        .map_err(|e| db::bad(&a.db, e))?
        .first()
    {
        return Err(Error::usage(format!(
            "--run {id}: no such run in {}",
            a.db.display()
        )));
    }
    let runs = db::runs(
        &conn,
        &Filter {
            ids: a.runs.clone(),
            ..Filter::default()
        },
    )
    .map_err(|e| db::bad(&a.db, e))?;
    write_prom(&a.out, &runs)?;
    println!(
        "wrote {} ({} run(s), the latest of each shape)",
        a.out.display(),
        latest(&runs).len()
    );
    Ok(())
}
