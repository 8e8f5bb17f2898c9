//! The quantities a benchmark reports, with their units and which way is better.

/// One reported quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Millions of operations per second (perftest's MsgRate[Mpps] too).
    Mops,
    /// Bandwidth in MB/s as perftest counts it (2^20 bytes).
    BwMbps,
    /// Average latency, µs.
    LatAvgUs,
    /// Median latency, µs (perftest's t_typical).
    LatMedianUs,
    /// 99th percentile latency, µs.
    LatP99Us,
    /// 99.9th percentile latency, µs.
    LatP999Us,
    /// Smallest latency, µs.
    LatMinUs,
    /// Largest latency, µs.
    LatMaxUs,
}

impl Metric {
    /// Every metric, in the order tables and files show them.
    pub const ALL: [Metric; 8] = [
        Metric::Mops,
        Metric::BwMbps,
        Metric::LatAvgUs,
        Metric::LatMedianUs,
        Metric::LatP99Us,
        Metric::LatP999Us,
        Metric::LatMinUs,
        Metric::LatMaxUs,
    ];

    /// The name on the command line and in files (`mops`, `bw_mbps`, `lat_p99_us`, …).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Mops => "mops",
            Metric::BwMbps => "bw_mbps",
            Metric::LatAvgUs => "lat_avg_us",
            Metric::LatMedianUs => "lat_median_us",
            Metric::LatP99Us => "lat_p99_us",
            Metric::LatP999Us => "lat_p999_us",
            Metric::LatMinUs => "lat_min_us",
            Metric::LatMaxUs => "lat_max_us",
        }
    }

    /// The unit, as files show it.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Mops => "Mops",
            Metric::BwMbps => "MB/s",
            _ => "us",
        }
    }

    /// True for latencies, where a smaller value is better.
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::Mops | Metric::BwMbps)
    }

    /// The metric named `s`; None for an unknown name.
    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Every name, for messages.
    pub fn names() -> String {
        Metric::ALL.map(Metric::name).join(", ")
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A value for some of the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics([Option<f64>; 8]);

impl Metrics {
    /// The value of `m`, if reported.
    pub fn get(&self, m: Metric) -> Option<f64> {
        self.0[m.index()]
    }

    /// Sets `m` (a non-finite value is left out).
    pub fn set(&mut self, m: Metric, v: f64) {
        if v.is_finite() {
            self.0[m.index()] = Some(v);
        }
    }

    /// Sets `m` when there is a value.
    pub fn set_opt(&mut self, m: Metric, v: Option<f64>) {
        if let Some(v) = v {
            self.set(m, v);
        }
    }

    /// The reported metrics and their values, in [`Metric::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Metric, f64)> + '_ {
        Metric::ALL
            .into_iter()
            .filter_map(|m| self.get(m).map(|v| (m, v)))
    }

    /// True when nothing is reported.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// The metric a sweep takes by default: `mops` when reported, else the first reported one.
    pub fn default_metric(&self) -> Option<Metric> {
        self.iter().next().map(|(m, _)| m)
    }
}
