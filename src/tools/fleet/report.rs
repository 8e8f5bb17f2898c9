//! What a fleet run tells: the table on stdout (bad pairs with why, each host's verdict), and
//! the files: N×N matrices (CSV), fleet.json, heatmaps (SVG, through the plot code).

use std::path::Path;

use serde_json::{json, Value};

use super::verdict::{self, Direction, HostVerdict, PairResult, Thresholds};
use crate::error::{Error, Result};
use crate::tools::history::db::{Run, Value as RunValue};
use crate::tools::plot::heatmap::{self, Heatmap};
use crate::tools::results::Metric;

/// Everything a fleet run measured and concluded.
#[derive(Debug)]
pub struct Fleet {
    /// As HOSTS lists them.
    pub hosts: Vec<String>,
    /// Why each host could not be reached (None: it could).
    pub unreachable: Vec<Option<String>>,
    /// Every pair measured.
    pub pairs: Vec<PairResult>,
    /// `bad[i]`: `pairs[i]` is bad.
    pub bad: Vec<bool>,
    /// Each host's verdict.
    pub verdicts: Vec<HostVerdict>,
    /// What makes a pair bad.
    pub thresholds: Thresholds,
    /// Stopped by Ctrl-C: what is here is what was measured.
    pub interrupted: bool,
}

impl Fleet {
    /// Judges every pair against the fleet's best, and every host by its pairs.
    pub fn judge(&mut self) {
        let best = verdict::best(&self.pairs);
        self.bad = self
            .pairs
            .iter()
            .map(|p| !verdict::reasons(p, best, self.thresholds, &self.hosts).is_empty())
            .collect();
        let reachable: Vec<bool> = self.unreachable.iter().map(Option::is_none).collect();
        self.verdicts = verdict::hosts(&reachable, &self.pairs, &self.bad);
    }

    fn reasons(&self, p: &PairResult) -> Vec<String> {
        verdict::reasons(p, verdict::best(&self.pairs), self.thresholds, &self.hosts)
    }

    /// `matrix[sender][receiver]` of one kind of value; the word for cells without one.
    fn matrix(
        &self,
        kind: fn(&Direction) -> Option<f64>,
    ) -> Vec<Vec<std::result::Result<f64, String>>> {
        let n = self.hosts.len();
        let mut m = vec![vec![Err(String::new()); n]; n];
        for (h, row) in m.iter_mut().enumerate() {
            for (g, cell) in row.iter_mut().enumerate() {
                let away = self.unreachable[h].is_some() || self.unreachable[g].is_some();
                *cell = Err(match (g == h, away) {
                    (true, _) => "—".into(),
                    (false, true) => "unreachable".into(),
                    // Not measured: the run was stopped first.
                    (false, false) => "".into(),
                });
            }
        }
        for p in &self.pairs {
            for (from, to, d) in [(p.a, p.b, &p.ab), (p.b, p.a, &p.ba)] {
                m[from][to] = kind(d).ok_or_else(|| "failed".to_string());
            }
            // A round trip is the same both ways: one run fills both cells.
            if kind(&p.ba).is_none() && kind(&p.ab).is_some() {
                m[p.b][p.a] = m[p.a][p.b].clone();
            }
        }
        m
    }
}

fn fmt_cell(c: &std::result::Result<f64, String>, digits: usize) -> String {
    match c {
        Ok(v) => format!("{v:.digits$}"),
        Err(w) => w.clone(),
    }
}

/// The table on stdout.
pub fn table(f: &Fleet) -> String {
    let mut out = String::new();
    let t = f.thresholds;
    out.push_str(&format!(
        "{:<24} {:>12} {:>12} {:>11}  {}\n",
        "pair (a – b)", "BW a→b MB/s", "BW b→a MB/s", "lat µs", "verdict"
    ));
    for (p, &bad) in f.pairs.iter().zip(&f.bad) {
        let v = |x: Option<f64>, d: usize| x.map_or("failed".into(), |v| format!("{v:.d$}"));
        let trusted = p.ab.trusted && p.ba.trusted;
        out.push_str(&format!(
            "{:<24} {:>12} {:>12} {:>11}  {}{}{}\n",
            format!("{} – {}", f.hosts[p.a], f.hosts[p.b]),
            v(p.ab.bw_mbps, 1),
            v(p.ba.bw_mbps, 1),
            v(p.ab.lat_us, 2),
            if bad { "BAD" } else { "ok" },
            if p.retested { " (retested)" } else { "" },
            if trusted { "" } else { " ?" },
        ));
    }
    if f.pairs.iter().any(|p| !(p.ab.trusted && p.ba.trusted)) {
        out.push_str("? questionable: the fabric's counters moved during a run (see fleet.json)\n");
    }
    let bad: Vec<&PairResult> = f
        .pairs
        .iter()
        .zip(&f.bad)
        .filter(|(_, &b)| b)
        .map(|(p, _)| p)
        .collect();
    out.push_str(&format!(
        "\nbad pairs (bandwidth below {} % of the best, latency above {}× the best, or a failed run): {}\n",
        t.bw_min_pct,
        t.lat_max_factor,
        if bad.is_empty() { "none".to_string() } else { bad.len().to_string() }
    ));
    for p in bad {
        for why in f.reasons(p) {
            out.push_str(&format!("  {} – {}: {why}\n", f.hosts[p.a], f.hosts[p.b]));
        }
    }
    out.push_str("\nhosts:\n");
    for ((h, v), u) in f.hosts.iter().zip(&f.verdicts).zip(&f.unreachable) {
        let why = u.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
        out.push_str(&format!("  {h:<22} {}{why}\n", v.name()));
    }
    let suspects: Vec<&str> = f
        .hosts
        .iter()
        .zip(&f.verdicts)
        .filter(|(_, &v)| v == HostVerdict::Suspect)
        .map(|(h, _)| h.as_str())
        .collect();
    if !suspects.is_empty() {
        out.push_str(&format!("suspect host(s): {}\n", suspects.join(", ")));
    }
    if f.interrupted {
        out.push_str("stopped before the end: the table has what was measured\n");
    }
    out
}

fn csv(f: &Fleet, m: &[Vec<std::result::Result<f64, String>>], digits: usize) -> String {
    let mut out = format!("sender\\receiver,{}\n", f.hosts.join(","));
    for (h, row) in f.hosts.iter().zip(m) {
        let cells: Vec<String> = row.iter().map(|c| fmt_cell(c, digits)).collect();
        out.push_str(&format!("{h},{}\n", cells.join(",")));
    }
    out
}

fn json_matrix(m: &[Vec<std::result::Result<f64, String>>]) -> Value {
    Value::Array(
        m.iter()
            .map(|row| {
                Value::Array(
                    row.iter()
                        .map(|c| c.as_ref().map_or(Value::Null, |v| json!(v)))
                        .collect(),
                )
            })
            .collect(),
    )
}

fn json_direction(d: &Direction) -> Value {
    json!({
        "bw_mbps": d.bw_mbps,
        "lat_us": d.lat_us,
        "errors": d.errors,
        "counters": d.counters,
        "trusted": d.trusted,
    })
}

/// The JSON document.
pub fn json_doc(f: &Fleet) -> Value {
    let pairs: Vec<Value> = f
        .pairs
        .iter()
        .zip(&f.bad)
        .map(|(p, &bad)| {
            json!({
                "a": f.hosts[p.a], "b": f.hosts[p.b],
                "a_to_b": json_direction(&p.ab), "b_to_a": json_direction(&p.ba),
                "bad": bad, "reasons": f.reasons(p), "retested": p.retested,
            })
        })
        .collect();
    let hosts: Vec<Value> = f
        .hosts
        .iter()
        .zip(&f.verdicts)
        .zip(&f.unreachable)
        .map(|((h, v), u)| json!({"host": h, "verdict": v.name(), "unreachable": u}))
        .collect();
    json!({
        "hosts": hosts,
        "thresholds": {"bw_min_pct": f.thresholds.bw_min_pct, "lat_max_factor": f.thresholds.lat_max_factor},
        "bw_mbps": json_matrix(&f.matrix(|d| d.bw_mbps)),
        "lat_us": json_matrix(&f.matrix(|d| d.lat_us)),
        "pairs": pairs,
        "interrupted": f.interrupted,
    })
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|e| Error::config(format!("cannot write {}: {e}", path.display())))
}

/// Writes bw.csv, lat.csv, fleet.json, bw.svg and lat.svg into `dir`.
pub fn write(f: &mut Fleet, dir: &Path) -> Result<()> {
    if f.verdicts.len() != f.hosts.len() {
        f.judge();
    }
    let bw = f.matrix(|d| d.bw_mbps);
    let lat = f.matrix(|d| d.lat_us);
    write_file(&dir.join("bw.csv"), &csv(f, &bw, 1))?;
    write_file(&dir.join("lat.csv"), &csv(f, &lat, 2))?;
    let doc = serde_json::to_string_pretty(&json_doc(f)).unwrap_or_default();
    write_file(&dir.join("fleet.json"), &(doc + "\n"))?;
    for (name, title, unit, m, lower) in [
        ("bw.svg", "write-bw between every pair", "MB/s", bw, false),
        (
            "lat.svg",
            "write-lat between every pair (t_typical)",
            "µs",
            lat,
            true,
        ),
    ] {
        let svg = heatmap::svg(&Heatmap {
            title: title.into(),
            unit: unit.into(),
            labels: f.hosts.clone(),
            cells: m,
            lower_is_better: lower,
        })?;
        write_file(&dir.join(name), &svg)?;
    }
    Ok(())
}

/// Every measured value as a history run (host = the sender, the peer and test as parameters),
/// for `--prom`: the fleet's results in the same textfile format as `history prom`'s.
pub fn runs(f: &Fleet, size: u64, at: f64) -> Vec<Run> {
    let mut out = Vec::new();
    for p in &f.pairs {
        let tests = [
            (p.a, p.b, &p.ab, "write-bw", Metric::BwMbps, p.ab.bw_mbps),
            (p.b, p.a, &p.ba, "write-bw", Metric::BwMbps, p.ba.bw_mbps),
            (
                p.a,
                p.b,
                &p.ab,
                "write-lat",
                Metric::LatMedianUs,
                p.ab.lat_us,
            ),
        ];
        for (from, to, d, test, metric, value) in tests {
            let Some(value) = value else { continue };
            let params = if test == "write-bw" {
                json!({"peer": f.hosts[to], "size": size, "test": test})
            } else {
                json!({"peer": f.hosts[to], "test": test})
            };
            out.push(Run {
                id: out.len() as i64,
                batch: 0,
                time: at,
                time_text: String::new(),
                host: f.hosts[from].clone(),
                device: None,
                port: None,
                versions: Default::default(),
                tool: "fleet".into(),
                params: params.to_string(),
                trusted: Some(d.trusted),
                questionable: Vec::new(),
                metrics: vec![RunValue {
                    name: metric.name().into(),
                    value,
                    unit: metric.unit().into(),
                    lower_is_better: metric.lower_is_better(),
                }],
                counters: Vec::new(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(bw: f64, lat: f64) -> Direction {
        Direction {
            bw_mbps: Some(bw),
            lat_us: Some(lat),
            trusted: true,
            ..Direction::default()
        }
    }

    #[test]
    fn the_table_and_files_name_the_slow_host() {
        let pairs = vec![
            PairResult {
                a: 0,
                b: 1,
                ab: d(3000.0, 2.0),
                ba: d(3000.0, 2.0),
                retested: false,
            },
            PairResult {
                a: 0,
                b: 2,
                ab: d(900.0, 9.0),
                ba: d(950.0, 9.0),
                retested: true,
            },
            PairResult {
                a: 1,
                b: 2,
                ab: d(910.0, 9.5),
                ba: d(920.0, 9.0),
                retested: true,
            },
        ];
        let mut f = Fleet {
            hosts: vec!["n0".into(), "n1".into(), "n2".into(), "n3".into()],
            unreachable: vec![None, None, None, Some("ssh failed (exit 255)".into())],
            pairs,
            bad: vec![],
            verdicts: vec![],
            thresholds: Thresholds {
                bw_min_pct: 93.0,
                lat_max_factor: 2.1,
            },
            interrupted: false,
        };
        f.judge();
        let t = table(&f);
        assert!(t.contains("suspect host(s): n2"), "{t}");
        assert!(
            t.contains("n3                     unreachable (ssh failed (exit 255))"),
            "{t}"
        );
        assert!(
            t.contains("n0 – n2: n0 → n2: bandwidth 900.0 MB/s, 30 %"),
            "{t}"
        );
        let dir = std::env::temp_dir().join(format!("fleet-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write(&mut f, &dir).unwrap();
        let bw = std::fs::read_to_string(dir.join("bw.csv")).unwrap();
        assert_eq!(
            bw.lines().nth(3),
            Some("n2,950.0,920.0,—,unreachable"),
            "{bw}"
        );
        assert_eq!(
            bw.lines().nth(4),
            Some("n3,unreachable,unreachable,unreachable,—"),
            "{bw}"
        );
        let j: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("fleet.json")).unwrap())
                .unwrap();
        assert_eq!(j["hosts"][2]["verdict"], "suspect");
        assert_eq!(j["bw_mbps"][0][1], 3000.0);
        assert_eq!(j["pairs"][1]["bad"], true);
        assert!(std::fs::read_to_string(dir.join("lat.svg"))
            .unwrap()
            .contains("n3"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
