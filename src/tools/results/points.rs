//! From report lines to points: one value per metric for each distinct shape of run in a file.

use std::collections::BTreeMap;

use super::{Facts, Kind, Measurement, Metric, Metrics, Source};

/// What identifies a point across files: the operation and the run's shape, each as far as the
/// file says (None matches anything).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Operation (`WRITE`, `READ`, `SEND`, `ATOMIC`, …).
    pub op: Option<String>,
    /// Payload bytes.
    pub size: Option<u64>,
    /// Work requests per doorbell.
    pub postlist: Option<u64>,
    /// Threads.
    pub threads: Option<u64>,
}

fn agree<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

impl Key {
    /// The key of a measurement.
    pub fn of(m: &Measurement) -> Key {
        Key {
            op: m.op.clone(),
            size: m.size,
            postlist: m.postlist,
            threads: m.threads,
        }
    }

    /// True when every field that both keys know is equal.
    pub fn matches(&self, other: &Key) -> bool {
        agree(&self.op, &other.op)
            && agree(&self.size, &other.size)
            && agree(&self.postlist, &other.postlist)
            && agree(&self.threads, &other.threads)
    }
}

/// One point of a file: a shape of run and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The format it was read from.
    pub source: Source,
    /// Benchmark name, when the file says.
    pub bench: String,
    /// The run's shape.
    pub key: Key,
    /// The values (for a sweep file, the medians over its repetitions).
    pub metrics: Metrics,
    /// False when the fabric's counters made a run behind it questionable; None when nothing
    /// says.
    pub trusted: Option<bool>,
    /// Parameters the file names beyond the key (a sweep's other parameters, a suite row's role
    /// and flags), name → value as written.
    pub params: BTreeMap<String, String>,
    /// The device and counters of the run behind it, as far as its output says.
    pub facts: Facts,
}

/// The side whose numbers are the benchmark's result, where both report: the descriptor's
/// reporting role for ours; perftest's client, the requester and the side that always reports.
fn active_role(bench: &str, source: Source) -> Option<&'static str> {
    match crate::bench::named(bench) {
        Some(b) => Some(b.reports),
        None if source == Source::Perftest => Some("client"),
        None => None,
    }
}

/// Per-thread medians of the interval rates, summed over threads: a run known only by its
/// once-a-second lines (the original's logs).
fn from_intervals(ms: &[&Measurement]) -> Metrics {
    let mut per_thread: BTreeMap<(Option<&str>, Option<u64>), Vec<f64>> = BTreeMap::new();
    for m in ms {
        if let Some(v) = m.metrics.get(Metric::Mops) {
            per_thread
                .entry((m.role.as_deref(), m.thread))
                .or_default()
                .push(v);
        }
    }
    let total: f64 = per_thread
        .values()
        .filter_map(|v| crate::stats::SampleStats::of(v).map(|s| s.median))
        .sum();
    let mut out = Metrics::default();
    if !per_thread.is_empty() {
        out.set(Metric::Mops, total);
    }
    out
}

/// Rates add up over the processes and threads that report them; latencies are averaged.
fn combine(ms: &[&Measurement]) -> Metrics {
    let mut out = Metrics::default();
    for metric in Metric::ALL {
        let vals: Vec<f64> = ms.iter().filter_map(|m| m.metrics.get(metric)).collect();
        if vals.is_empty() {
            continue;
        }
        let sum: f64 = vals.iter().sum();
        out.set(
            metric,
            if metric.lower_is_better() {
                sum / vals.len() as f64
            } else {
                sum
            },
        );
    }
    out
}

/// One point per distinct [`Key`] of the measurements, in order of first appearance. A key's
/// value comes from its summaries (the active side's, where both sides report: e.g. the server
/// of `rw-tput-sender`, the client of perftest); a key with none comes from the per-thread
/// interval lines (median per thread, summed) or else the median of the printed totals.
pub fn points(all: &[Measurement]) -> Vec<Point> {
    // The once-a-second lines only stand in for a run without any summary.
    let has_summary = all.iter().any(|m| m.kind == Kind::Summary);
    let ms: Vec<&Measurement> = all
        .iter()
        .filter(|m| !has_summary || m.kind == Kind::Summary)
        .collect();
    let mut keys: Vec<(Key, String, Source)> = Vec::new();
    for m in &ms {
        let k = Key::of(m);
        if !keys.iter().any(|(x, _, _)| *x == k) {
            keys.push((k, m.bench.clone(), m.source));
        }
    }
    let mut out = Vec::new();
    for (key, bench, source) in keys {
        let of_key: Vec<&Measurement> = ms.iter().copied().filter(|m| Key::of(m) == key).collect();
        let of_kind = |k: Kind| -> Vec<&Measurement> {
            of_key.iter().copied().filter(|m| m.kind == k).collect()
        };
        let summaries = of_kind(Kind::Summary);
        let metrics = if !summaries.is_empty() {
            let roles: Vec<Option<&str>> = summaries.iter().map(|m| m.role.as_deref()).collect();
            let role = active_role(&bench, source)
                .filter(|r| roles.contains(&Some(*r)))
                .map(Some)
                .unwrap_or(roles[0]);
            let chosen: Vec<&Measurement> = summaries
                .into_iter()
                .filter(|m| m.role.as_deref() == role)
                .collect();
            combine(&chosen)
        } else if !of_kind(Kind::Interval).is_empty() {
            from_intervals(&of_kind(Kind::Interval))
        } else {
            let totals: Vec<f64> = of_kind(Kind::Total)
                .iter()
                .filter_map(|m| m.metrics.get(Metric::Mops))
                .collect();
            let mut t = Metrics::default();
            t.set_opt(
                Metric::Mops,
                crate::stats::SampleStats::of(&totals).map(|s| s.median),
            );
            t
        };
        // Any questionable run behind the point makes it questionable.
        let trusted = of_key
            .iter()
            .filter_map(|m| m.trusted)
            .reduce(|a, b| a && b);
        // The counters of the first process that reported some (the processes of one run on
        // one host watch the same ports), the device of the first that names one, every class.
        let mut facts = of_key
            .iter()
            .find(|m| !m.facts.counters.is_empty())
            .map(|m| m.facts.clone())
            .unwrap_or_default();
        if facts.device.is_none() {
            if let Some(m) = of_key.iter().find(|m| m.facts.device.is_some()) {
                (facts.device, facts.port) = (m.facts.device.clone(), m.facts.port);
            }
        }
        for m in &of_key {
            for q in &m.facts.questionable {
                if !facts.questionable.contains(q) {
                    facts.questionable.push(q.clone());
                }
            }
        }
        if !metrics.is_empty() {
            out.push(Point {
                source,
                bench,
                key,
                metrics,
                trusted,
                params: BTreeMap::new(),
                facts,
            });
        }
    }
    out
}
