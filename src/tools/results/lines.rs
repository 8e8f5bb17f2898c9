//! Line by line: our `--json` lines (and perftest's one-line documents, as `run-local.sh` prints
//! them), our text summary lines and the original C suite's log lines.

use serde_json::Value;

use super::{perftest, Kind, Measurement, Metric, Source};

/// Splits `run-local.sh`'s `[label] ` prefix off a line.
pub(super) fn split_label(line: &str) -> (Option<&str>, &str) {
    if let Some(rest) = line.strip_prefix('[') {
        if let Some((label, body)) = rest.split_once("] ") {
            if !label.is_empty() && !label.contains(' ') {
                return (Some(label), body);
            }
        }
    }
    (None, line)
}

/// The line without ANSI colour sequences (the original's `hrd_red_printf`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Every measurement on a line of its own. Our text lines are dropped where the output also has
/// our JSON lines (which say the same, with more precision and the run's shape).
pub(super) fn parse_lines(text: &str) -> Vec<Measurement> {
    let mut json = Vec::new();
    let mut plain = Vec::new();
    for raw in text.lines() {
        let line = strip_ansi(raw);
        let (label, body) = split_label(line.trim_end());
        let body = body.trim();
        if body.starts_with('{') {
            if let Ok(v) = serde_json::from_str::<Value>(body) {
                if v.get("test_info").is_some() {
                    json.extend(perftest::parse_document(&v, label));
                } else if let Some(m) = our_json(&v, label) {
                    json.push(m);
                }
            }
        } else if let Some(mut m) = text_line(body) {
            if m.role.is_none() {
                m.role = label.map(str::to_string);
            }
            plain.push(m);
        }
    }
    let ours_json = json.iter().any(|m| m.source == Source::Ours);
    let ours_text = plain.iter().any(|m| m.source == Source::Ours);
    if ours_text {
        // The per-thread lines are the same format in both suites: ours when the file has our
        // summary line.
        for m in &mut plain {
            m.source = Source::Ours;
        }
    }
    if ours_json {
        plain.retain(|m| m.source != Source::Ours);
    }
    json.extend(plain);
    json
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

fn flag(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

/// One of our JSON lines; None for lines without a result (passive sides, failed runs, counters
/// such as HERD's key-value statistics).
fn our_json(v: &Value, label: Option<&str>) -> Option<Measurement> {
    let bench = v.get("bench")?.as_str()?;
    let kind = if flag(v, "summary") || flag(v, "latency") || flag(v, "machine_summary") {
        Kind::Summary
    } else if v.get("thread").is_some() && v.get("mops").is_some() {
        Kind::Interval
    } else {
        return None;
    };
    if flag(v, "passive") || v.get("ok").and_then(Value::as_bool) == Some(false) {
        return None;
    }
    let mut m = Measurement::new(Source::Ours, kind);
    m.bench = bench.to_string();
    m.role = v
        .get("role")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| label.map(str::to_string));
    m.op = v.get("op").and_then(Value::as_str).map(str::to_string);
    m.size = u(v, "size");
    m.postlist = u(v, "postlist");
    m.threads = u(v, "threads");
    m.thread = u(v, "thread");
    m.trusted = v.get("trusted").and_then(Value::as_bool);
    m.facts = super::Facts::of_json(v);
    if flag(v, "machine_summary") {
        // rc-swarm: one line per process, whose rates add up.
        m.role = Some("machine".into());
        m.metrics.set_opt(Metric::Mops, f(v, "average_mops"));
    } else if flag(v, "latency") {
        m.metrics.set_opt(Metric::LatAvgUs, f(v, "average_us"));
        m.metrics.set_opt(Metric::LatMedianUs, f(v, "median_us"));
        m.metrics.set_opt(Metric::LatP99Us, f(v, "p99_us"));
    } else {
        m.metrics.set_opt(Metric::Mops, f(v, "mops"));
    }
    (!m.metrics.is_empty()).then_some(m)
}

/// A rate in Mops from a number and its unit: IOPS are operations per second; the original's
/// paper-era code printed operations per second under "Mops" too, so any other unit above 10^4
/// is taken as operations per second.
fn mops_of(value: f64, unit: &str) -> f64 {
    if unit.eq_ignore_ascii_case("IOPS") || value > 1e4 {
        value / 1e6
    } else {
        value
    }
}

/// The first number in `s` and the word after it (`"4000000.00 IOPS. nb_tx"` → (4e6, "IOPS")).
fn number_and_unit(s: &str) -> Option<(f64, String)> {
    let mut words = s.split_whitespace();
    let v: f64 = words.next()?.parse().ok()?;
    let unit = words
        .next()
        .unwrap_or("")
        .trim_end_matches(['.', ','])
        .to_string();
    Some((v, unit))
}

/// `<what> = 1.23us` → 1.23, for the latency line.
fn us_after(s: &str, what: &str) -> Option<f64> {
    let rest = &s[s.find(what)? + what.len()..];
    let rest = rest.trim_start().trim_start_matches('=').trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Our text lines and the original's.
fn text_line(body: &str) -> Option<Measurement> {
    if let Some(rest) = body.strip_prefix("main: ") {
        return main_line(rest);
    }
    // rc-swarm: "Machine 0 average: 1.23 M/s".
    if let Some(rest) = body.strip_prefix("Machine ") {
        let (id, rest) = rest.split_once(" average: ")?;
        let id: u64 = id.parse().ok()?;
        let (v, unit) = number_and_unit(rest)?;
        let mut m = Measurement::new(Source::Ours, Kind::Summary);
        m.bench = "rc-swarm".into();
        m.role = Some("machine".into());
        m.thread = Some(id);
        m.metrics.set(Metric::Mops, mops_of(v, &unit));
        return Some(m);
    }
    if body.starts_with("Average latency = ") {
        return latency_line(body, Source::Original);
    }
    None
}

fn latency_line(body: &str, source: Source) -> Option<Measurement> {
    let mut m = Measurement::new(source, Kind::Summary);
    m.bench = "rw-postlist-latency".into();
    m.metrics
        .set(Metric::LatAvgUs, us_after(body, "Average latency")?);
    m.metrics
        .set_opt(Metric::LatMedianUs, us_after(body, "median"));
    m.metrics.set_opt(Metric::LatP99Us, us_after(body, "99th"));
    Some(m)
}

fn main_line(rest: &str) -> Option<Measurement> {
    if let Some(v) = rest.strip_prefix("Total throughput = ") {
        let (v, unit) = number_and_unit(v)?;
        // Ours says "Mops"; the original's line has no unit and sums IOPS.
        let (source, kind) = if unit == "Mops" {
            (Source::Ours, Kind::Summary)
        } else {
            (Source::Original, Kind::Total)
        };
        let mut m = Measurement::new(source, kind);
        m.metrics.set(Metric::Mops, mops_of(v, &unit));
        return Some(m);
    }
    for prefix in ["Total tput = ", "Total tput ", "Machine: "] {
        if let Some(v) = rest.strip_prefix(prefix) {
            let (v, unit) = number_and_unit(v)?;
            let mut m = Measurement::new(Source::Original, Kind::Total);
            m.metrics.set(Metric::Mops, mops_of(v, &unit));
            return Some(m);
        }
    }
    // "Server 3: 1234.00 IOPS", "Client 0: 1.20 M/s", "Worker 2: 3.1 Mops. Average postlist …",
    // and ours "Server 0: Average latency = …us, median = …, 99th = … (N samples)".
    let (who, after) = rest.split_once(": ")?;
    let (role, id) = who.split_once(' ')?;
    if !matches!(role, "Server" | "Client" | "Worker") {
        return None;
    }
    let id: u64 = id.parse().ok()?;
    if after.starts_with("Average latency") {
        let mut m = latency_line(after, Source::Ours)?;
        m.role = Some(role.to_lowercase());
        m.thread = Some(id);
        return Some(m);
    }
    let (v, unit) = number_and_unit(after)?;
    if !matches!(unit.as_str(), "IOPS" | "M/s" | "Mops") {
        return None;
    }
    let mut m = Measurement::new(Source::Original, Kind::Interval);
    m.role = Some(role.to_lowercase());
    m.thread = Some(id);
    m.metrics.set(Metric::Mops, mops_of(v, &unit));
    Some(m)
}

/// What a command line in the file says about the run (`# rw-tput-sender --size 32 …`, `$ …`):
/// filled into measurements whose output leaves it out (the original's lines say nothing of the
/// run's shape).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Hints {
    /// Benchmark name (a word whose file name is one of ours, or an `ib_*` tool).
    pub bench: Option<String>,
    /// From `--do-read 0|1` (rw-* benchmarks) or the benchmark (ud-*: SEND).
    pub op: Option<String>,
    /// `--size`.
    pub size: Option<u64>,
    /// `--postlist`.
    pub postlist: Option<u64>,
    /// `--num-threads` / `--num_threads`.
    pub threads: Option<u64>,
}

impl Hints {
    /// Fills what `m` does not know.
    pub fn fill(&self, m: &mut Measurement) {
        if m.bench.is_empty() {
            if let Some(b) = &self.bench {
                m.bench = b.clone();
            }
        }
        m.op = m.op.take().or_else(|| self.op.clone());
        m.size = m.size.or(self.size);
        m.postlist = m.postlist.or(self.postlist);
        m.threads = m.threads.or(self.threads);
    }
}

/// The [`Hints`] of the command lines in `text`: lines that start with `#`, `$` or `+ ` (a shell
/// trace) and name flags.
pub fn command_hints(text: &str) -> Hints {
    let mut h = Hints::default();
    for line in text.lines() {
        let t = line.trim_start();
        let Some(cmd) = t
            .strip_prefix('#')
            .or_else(|| t.strip_prefix('$'))
            .or_else(|| t.strip_prefix("+ "))
        else {
            continue;
        };
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let mut do_read = None;
        for (i, w) in words.iter().enumerate() {
            let (name, inline) = match w.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v)),
                _ => (*w, None),
            };
            let value = || inline.or_else(|| words.get(i + 1).copied());
            let num = || value().and_then(|v| v.parse::<u64>().ok());
            match name.replace('_', "-").as_str() {
                "--size" => h.size = num().or(h.size),
                "--postlist" => h.postlist = num().or(h.postlist),
                "--num-threads" => h.threads = num().or(h.threads),
                "--do-read" => do_read = num(),
                _ => {
                    let base = w.rsplit('/').next().unwrap_or(w);
                    if h.bench.is_none() && is_bench_name(base) {
                        h.bench = Some(base.to_string());
                    }
                }
            }
        }
        if let Some(b) = &h.bench {
            if b.starts_with("rw-") || b == "rc-swarm" {
                if let Some(r) = do_read {
                    h.op = Some(if r == 1 { "READ" } else { "WRITE" }.into());
                }
            } else if b.starts_with("ud-") {
                h.op = Some("SEND".into());
            }
        }
    }
    h
}

fn is_bench_name(w: &str) -> bool {
    crate::bench::named(w).is_some() || (w.starts_with("ib_") && w.len() > 3)
}
