//! The fabric's own counters around a measurement: what the provider (`hw_counters`), the IB port
//! (`counters`) and, on RoCE, the netdev (`statistics`, carrier changes) counted while a run
//! measured, classified, with a verdict: a result during which packets were retransmitted, the
//! link went down or a receiver was not ready is *questionable*. Read from sysfs at the start and
//! the end of the measured window, never inside it.

mod classes;
pub mod link;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use classes::{class_of, Class};
pub use link::{LinkEvent, LinkLog};

use crate::stats::JsonObject;

/// A port a run uses, as sysfs names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRef {
    /// The RDMA device (`rxe0`, `mlx5_0`).
    pub device: String,
    /// The port number (from 1).
    pub port: u8,
}

impl PortRef {
    /// `device:port`, as the counter line names it.
    pub fn label(&self) -> String {
        format!("{}:{}", self.device, self.port)
    }
}

/// The counters of one port at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Counter name → value (`net:` names are the netdev's).
    pub values: BTreeMap<String, u64>,
    /// Why nothing could be read, when nothing could.
    pub unavailable: Option<String>,
}

/// Reads every counter of `port` under `sys` (`/sys` on a live host; a copied tree in tests).
pub fn snapshot(sys: &Path, port: &PortRef) -> Snapshot {
    let dir = sys
        .join("class/infiniband")
        .join(&port.device)
        .join("ports")
        .join(port.port.to_string());
    let mut values = BTreeMap::new();
    let mut seen_dir = false;
    let mut unreadable = Vec::new();
    for sub in ["hw_counters", "counters"] {
        match read_dir_values(&dir.join(sub)) {
            Some(Ok(vs)) => {
                seen_dir = true;
                for (k, v) in vs {
                    let key = if values.contains_key(&k) {
                        format!("{sub}/{k}")
                    } else {
                        k
                    };
                    values.insert(key, v);
                }
            }
            Some(Err(e)) => unreadable.push(format!("{}: {e}", dir.join(sub).display())),
            None => {}
        }
    }
    if let Some(ndev) = netdev_of(&dir) {
        let net = sys.join("class/net").join(&ndev);
        if let Some(Ok(vs)) = read_dir_values(&net.join("statistics")) {
            values.extend(vs.into_iter().map(|(k, v)| (format!("net:{k}"), v)));
        }
        if let Some(v) = read_value(&net.join("carrier_changes")) {
            values.insert("net:carrier_changes".into(), v);
        }
    }
    let unavailable = if !unreadable.is_empty() {
        Some(format!("cannot read {}", unreadable.join("; ")))
    } else if !seen_dir {
        Some(format!(
            "{} exposes no port counters (no hw_counters or counters under {})",
            port.device,
            dir.display()
        ))
    } else {
        None
    };
    Snapshot {
        values,
        unavailable,
    }
}

/// The netdev a RoCE port runs on (the GID table's first entry names it), if any.
fn netdev_of(port_dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(port_dir.join("gid_attrs/ndevs/0")).ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn read_value(p: &Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Every numeric file of `dir`: None when there is no such directory, an error when it cannot be
/// listed. A file that cannot be read or is not a number is left out (some providers' counters
/// refuse reads on some ports).
fn read_dir_values(dir: &Path) -> Option<std::io::Result<Vec<(String, u64)>>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(e)),
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(v) = read_value(&e.path()) {
            out.push((name, v));
        }
    }
    Some(Ok(out))
}

/// How much each class may move before the result is questionable; a class without a limit is
/// reported, never flagged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tolerance {
    limits: BTreeMap<Class, u64>,
}

impl Default for Tolerance {
    /// Retransmissions, RNR, the link and fatal errors: any movement; congestion: reported only.
    fn default() -> Self {
        let limits = [Class::Retransmission, Class::Rnr, Class::Link, Class::Fatal]
            .into_iter()
            .map(|c| (c, 0))
            .collect();
        Tolerance { limits }
    }
}

impl Tolerance {
    /// The defaults changed by `CLASS=N,…` (`--counter-tolerance`): class CLASS may move by N
    /// before the result is questionable; `CLASS=off` reports it without flagging.
    pub fn parse(spec: &str) -> Result<Tolerance, String> {
        let mut t = Tolerance::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, limit) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' is not CLASS=N (e.g. retransmission=100)"))?;
            let known: Vec<&str> = Class::ALL.iter().map(|c| c.name()).collect();
            let class = Class::parse(name.trim()).ok_or_else(|| {
                format!(
                    "'{name}' is not a counter class (known: {})",
                    known.join(", ")
                )
            })?;
            match limit.trim() {
                "off" => {
                    t.limits.remove(&class);
                }
                n => {
                    let n = n
                        .parse::<u64>()
                        .map_err(|_| format!("'{n}' is not a count (or 'off') for {name}"))?;
                    t.limits.insert(class, n);
                }
            }
        }
        Ok(t)
    }

    /// The classes whose movement in `deltas` is above their limit.
    pub fn exceeded(&self, deltas: &[Delta]) -> Vec<Class> {
        let mut by_class: BTreeMap<Class, u64> = BTreeMap::new();
        for d in deltas {
            *by_class.entry(d.class).or_default() += d.by;
        }
        by_class
            .into_iter()
            .filter(|(c, n)| self.limits.get(c).is_some_and(|limit| n > limit))
            .map(|(c, _)| c)
            .collect()
    }
}

/// One counter that moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    /// Its name.
    pub name: String,
    /// Its class.
    pub class: Class,
    /// By how much.
    pub by: u64,
}

/// What one port's counters say about a run.
#[derive(Debug, Clone)]
pub struct PortReport {
    /// The port.
    pub port: PortRef,
    /// The counters that moved, by class.
    pub deltas: Vec<Delta>,
    /// The classes that moved beyond their tolerance.
    pub questionable: Vec<Class>,
    /// Why the counters could not be read, when they could not.
    pub unavailable: Option<String>,
    /// The tolerance has a limit for the link class (a link's change of state flags the run).
    pub link_limited: bool,
}

impl PortReport {
    /// The report of `port` from its snapshots before and after the window.
    pub fn of(port: PortRef, before: &Snapshot, after: &Snapshot, t: &Tolerance) -> PortReport {
        let unavailable = before.unavailable.clone().or(after.unavailable.clone());
        let mut deltas: Vec<Delta> = after
            .values
            .iter()
            .filter_map(|(name, &v)| {
                let by = v.checked_sub(*before.values.get(name)?)?;
                (by > 0).then(|| Delta {
                    name: name.clone(),
                    class: class_of(name.strip_prefix("counters/").unwrap_or(name)),
                    by,
                })
            })
            .collect();
        deltas.sort_by_key(|d| {
            (
                Class::ALL.iter().position(|&c| c == d.class),
                d.name.clone(),
            )
        });
        let questionable = t.exceeded(&deltas);
        PortReport {
            port,
            deltas,
            questionable,
            unavailable,
            link_limited: t.limits.contains_key(&Class::Link),
        }
    }

    /// The line under a run's summary: the counters that moved, by class (traffic left out),
    /// and the verdict.
    pub fn line(&self) -> String {
        let label = self.port.label();
        if let Some(why) = &self.unavailable {
            return format!("main: counters {label}: unavailable ({why})");
        }
        let mut classes = Vec::new();
        for class in Class::ALL.into_iter().filter(|&c| c != Class::Traffic) {
            let moved: Vec<String> = self
                .deltas
                .iter()
                .filter(|d| d.class == class)
                .map(|d| format!("{} +{}", d.name, d.by))
                .collect();
            if !moved.is_empty() {
                classes.push(format!("{} {}", class.name(), moved.join(", ")));
            }
        }
        let mut line = if classes.is_empty() {
            format!("main: counters {label}: no error or congestion counter moved")
        } else {
            format!("main: counters {label}: {}", classes.join("; "))
        };
        if !self.questionable.is_empty() {
            let q: Vec<&str> = self.questionable.iter().map(|c| c.name()).collect();
            line.push_str(&format!("; questionable: {}", q.join(", ")));
        }
        line
    }

    /// The counters that moved, as a JSON object (name → delta).
    pub fn json(&self) -> JsonObject {
        self.deltas
            .iter()
            .fold(JsonObject::new(), |o, d| o.int(&d.name, d.by))
    }
}

/// The counters of every port a run uses, from the start of its measured window.
#[derive(Debug)]
pub struct Watch {
    sys: PathBuf,
    tolerance: Tolerance,
    ports: Vec<(PortRef, Snapshot)>,
}

impl Watch {
    /// Snapshots `ports` (each once) under `sys`.
    pub fn start(sys: &Path, ports: &[PortRef], tolerance: Tolerance) -> Watch {
        let mut seen: Vec<(PortRef, Snapshot)> = Vec::new();
        for p in ports {
            if !seen.iter().any(|(q, _)| q == p) {
                seen.push((p.clone(), snapshot(sys, p)));
            }
        }
        Watch {
            sys: sys.to_path_buf(),
            tolerance,
            ports: seen,
        }
    }

    /// The window is over: a report per port.
    pub fn finish(&self) -> Verdict {
        let reports = self
            .ports
            .iter()
            .map(|(p, before)| {
                let after = snapshot(&self.sys, p);
                PortReport::of(p.clone(), before, &after, &self.tolerance)
            })
            .collect();
        Verdict {
            reports,
            links: Vec::new(),
        }
    }
}

/// What the counters said about a run, port by port.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// One report per port.
    pub reports: Vec<PortReport>,
    /// The links' changes of state during the window (a change is a link fault, counted or
    /// not: siw has no counters).
    pub links: Vec<LinkEvent>,
}

impl Verdict {
    /// False when a flagged class moved beyond its tolerance on some port, or a link changed
    /// state; None when no port's counters could be read and no link changed.
    pub fn trusted(&self) -> Option<bool> {
        if !self.links.is_empty() && self.link_flagged() {
            return Some(false);
        }
        let read: Vec<&PortReport> = self
            .reports
            .iter()
            .filter(|r| r.unavailable.is_none())
            .collect();
        if read.is_empty() {
            return None;
        }
        Some(read.iter().all(|r| r.questionable.is_empty()))
    }

    /// A link's change of state flags the link class, unless `--counter-tolerance link=off`
    /// (every port's report was made with the run's one tolerance).
    fn link_flagged(&self) -> bool {
        self.reports.first().is_none_or(|r| r.link_limited)
    }

    /// The classes flagged on any port.
    pub fn questionable(&self) -> Vec<Class> {
        let mut all: Vec<Class> = self
            .reports
            .iter()
            .flat_map(|r| r.questionable.iter().copied())
            .collect();
        if !self.links.is_empty() && self.link_flagged() {
            all.push(Class::Link);
        }
        all.sort();
        all.dedup();
        all
    }

    /// The fields the summary's JSON carries: `counters` (port → name → delta), `questionable`
    /// (the flagged classes), `trusted`, and `counters_unavailable` when nothing was read.
    pub fn json(&self) -> JsonObject {
        let per_port = self
            .reports
            .iter()
            .filter(|r| r.unavailable.is_none())
            .fold(JsonObject::new(), |o, r| {
                o.object(&r.port.label(), &r.json())
            });
        let q: Vec<&str> = self.questionable().iter().map(|c| c.name()).collect();
        let mut o = JsonObject::new()
            .object("counters", &per_port)
            .strs("questionable", &q);
        if !self.links.is_empty() {
            o = o.objects("link_events", &link::json(&self.links));
        }
        match self.trusted() {
            Some(t) => o.bool("trusted", t),
            None => {
                let why: Vec<String> = self
                    .reports
                    .iter()
                    .filter_map(|r| r.unavailable.clone())
                    .collect();
                o.str("counters_unavailable", &why.join("; "))
            }
        }
    }
}

/// perftest's `-W`/`--report-counters`: named counters of a port, each a path relative to the
/// port's sysfs directory (`counters/port_xmit_data`, `hw_counters/out_of_buffer`); every read
/// gives the change since the one before.
#[derive(Debug)]
pub struct Named {
    dir: PathBuf,
    names: Vec<String>,
    last: Vec<u64>,
}

impl Named {
    /// Opens the comma-separated `list` on `port` and reads it once; an unknown name is refused
    /// with the names there are.
    pub fn open(sys: &Path, port: &PortRef, list: &str) -> Result<Named, String> {
        let dir = sys
            .join("class/infiniband")
            .join(&port.device)
            .join("ports")
            .join(port.port.to_string());
        let names: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        if names.is_empty() {
            return Err("-W/--report-counters needs a list of counter names".into());
        }
        let mut last = Vec::with_capacity(names.len());
        for n in &names {
            // Names stay below the port's directory, as perftest requires.
            let v = (!n.contains(".."))
                .then(|| read_value(&dir.join(n)))
                .flatten();
            match v {
                Some(v) => last.push(v),
                None => {
                    return Err(format!(
                        "-W/--report-counters: no counter {n} on {} (available: {})",
                        port.label(),
                        available(&dir)
                    ))
                }
            }
        }
        Ok(Named { dir, names, last })
    }

    /// Each counter's change since the last read (a counter that cannot be read now counts 0).
    pub fn deltas(&mut self) -> Vec<(String, u64)> {
        self.names
            .iter()
            .zip(self.last.iter_mut())
            .map(|(n, last)| {
                let now = read_value(&self.dir.join(n)).unwrap_or(*last);
                let d = now.saturating_sub(*last);
                *last = now;
                (n.clone(), d)
            })
            .collect()
    }
}

/// The counter paths under a port directory, for a refusal: `hw_counters/…`, `counters/…`.
fn available(dir: &Path) -> String {
    let mut all = Vec::new();
    for sub in ["hw_counters", "counters"] {
        if let Some(Ok(vs)) = read_dir_values(&dir.join(sub)) {
            all.extend(vs.into_iter().map(|(k, _)| format!("{sub}/{k}")));
        }
    }
    all.sort();
    if all.is_empty() {
        "none: this port exposes no counters".into()
    } else {
        all.join(", ")
    }
}

#[cfg(test)]
mod tests;
