//! perftest's output (4.5's, and our perftest-compatible tools', which print the same): the BW
//! and latency tables of the text output, and the `--out_json` document.

use std::collections::HashMap;

use serde_json::Value;

use super::lines::split_label;
use super::{Kind, Measurement, Metric, Source};

/// MB/s per Gb/s: perftest's MB is 2^20 bytes, its Gb 10^9 bits.
const MBPS_PER_GBPS: f64 = 125_000_000.0 / 1_048_576.0;

/// perftest's verb and test, from its title ("RDMA_Write Post List BW Test").
#[derive(Debug, Clone, Default)]
struct Title {
    op: Option<String>,
    bench: String,
}

fn title_of(line: &str) -> Option<Title> {
    let t = line.trim();
    if !t.ends_with(" Test") {
        return None;
    }
    let first = t.split(['_', ' ']).collect::<Vec<_>>();
    let (op, verb) = match (first.first().copied(), first.get(1).copied()) {
        (Some("RDMA"), Some("Write")) => ("WRITE", "write"),
        (Some("RDMA"), Some("Read")) => ("READ", "read"),
        (Some("Send"), _) => ("SEND", "send"),
        (Some("Atomic"), _) => ("ATOMIC", "atomic"),
        _ => return None,
    };
    let test = if t.contains(" BW") { "bw" } else { "lat" };
    Some(Title {
        op: Some(op.into()),
        bench: format!("ib_{verb}_{test}"),
    })
}

/// Which table is open.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Table {
    Bw { gbits: bool },
    Lat,
    LatDuration,
}

/// One process's state while reading (lines of several processes may interleave).
#[derive(Debug, Default)]
struct State {
    title: Title,
    postlist: Option<u64>,
    table: Option<Table>,
}

fn is_result_line(s: &str) -> bool {
    s.len() > 20 && s.chars().all(|c| c == '-')
}

/// The rows of every perftest table in `text`.
pub(super) fn parse_tables(text: &str) -> Vec<Measurement> {
    let mut states: HashMap<Option<String>, State> = HashMap::new();
    let mut out = Vec::new();
    for raw in text.lines() {
        let (label, body) = split_label(raw);
        let body = body.trim_end();
        let st = states.entry(label.map(str::to_string)).or_default();
        if let Some(t) = title_of(body) {
            *st = State {
                title: t,
                ..State::default()
            };
            continue;
        }
        if let Some(v) = body.trim().strip_prefix("Post List") {
            st.postlist = v.trim_start().trim_start_matches(':').trim().parse().ok();
            continue;
        }
        if body.contains("#bytes") {
            st.table = if body.contains("BW peak") {
                Some(Table::Bw {
                    gbits: body.contains("Gb/sec"),
                })
            } else if body.contains("t_min") {
                Some(Table::Lat)
            } else if body.contains("tps average") {
                Some(Table::LatDuration)
            } else {
                None
            };
            continue;
        }
        if is_result_line(body.trim()) {
            st.table = None;
            continue;
        }
        let Some(table) = st.table else { continue };
        let nums: Vec<f64> = body
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        let need = match table {
            Table::Bw { .. } => 5,
            Table::Lat => 9,
            Table::LatDuration => 4,
        };
        if nums.len() < need || nums[0].fract() != 0.0 {
            continue;
        }
        let mut m = Measurement::new(Source::Perftest, Kind::Summary);
        m.bench = st.title.bench.clone();
        m.op = st.title.op.clone();
        m.role = label.map(str::to_string);
        m.size = Some(nums[0] as u64);
        m.postlist = Some(st.postlist.unwrap_or(1));
        match table {
            Table::Bw { gbits } => {
                let k = if gbits { MBPS_PER_GBPS } else { 1.0 };
                m.metrics.set(Metric::BwMbps, nums[3] * k);
                m.metrics.set(Metric::Mops, nums[4]);
            }
            Table::Lat => {
                m.metrics.set(Metric::LatMinUs, nums[2]);
                m.metrics.set(Metric::LatMaxUs, nums[3]);
                m.metrics.set(Metric::LatMedianUs, nums[4]);
                m.metrics.set(Metric::LatAvgUs, nums[5]);
                m.metrics.set(Metric::LatP99Us, nums[7]);
                m.metrics.set(Metric::LatP999Us, nums[8]);
            }
            Table::LatDuration => {
                m.metrics.set(Metric::LatAvgUs, nums[2]);
            }
        }
        out.push(m);
    }
    out
}

/// perftest 4.5's `--out_json` file as a JSON value: it writes one `key: value,` per line, keys
/// and most strings unquoted, with trailing commas (not JSON); ours is JSON. None when `text` is
/// neither.
pub(super) fn document_of_text(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text.trim()) {
        return v.get("test_info").is_some().then_some(v);
    }
    let mut stack: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
    let mut root = None;
    for line in text.lines() {
        let t = line.trim().trim_end_matches(',');
        if t.is_empty() {
            continue;
        }
        if t == "{" && stack.is_empty() {
            stack.push((String::new(), serde_json::Map::new()));
        } else if t == "}" {
            let (name, obj) = stack.pop()?;
            match stack.last_mut() {
                Some((_, parent)) => {
                    parent.insert(name, Value::Object(obj));
                }
                None => root = Some(Value::Object(obj)),
            }
        } else {
            let (k, v) = t.split_once(':')?;
            let (k, v) = (k.trim().trim_matches('"').to_string(), v.trim());
            if v == "{" {
                stack.push((k, serde_json::Map::new()));
                continue;
            }
            let v = v.trim_matches('"');
            let value = match v.parse::<f64>() {
                Ok(n) => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
                Err(_) => Value::String(v.to_string()),
            };
            stack.last_mut()?.1.insert(k, value);
        }
    }
    root.filter(|v| v.get("test_info").is_some())
}

fn num(v: &Value, k: &str) -> Option<f64> {
    match v.get(k)? {
        Value::Number(n) => n.as_f64(),
        // perftest 4.5 writes some numbers as strings.
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The rows of perftest's JSON document (`{"test_info": …, "results": …}`, and our
/// `all_results` with every row of a `-a` run).
pub(super) fn parse_document(doc: &Value, label: Option<&str>) -> Vec<Measurement> {
    let info = &doc["test_info"];
    let test = info
        .get("test")
        .and_then(Value::as_str)
        .unwrap_or("")
        .replace('_', " ")
        .replace("RDMA ", "RDMA_");
    let title = title_of(&test).unwrap_or_default();
    let postlist = num(info, "Post_List").map(|v| v as u64).unwrap_or(1);
    let rows: Vec<&Value> = match doc.get("all_results").and_then(Value::as_array) {
        Some(all) if !all.is_empty() => all.iter().collect(),
        _ => match doc.get("results") {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(r @ Value::Object(_)) => vec![r],
            _ => Vec::new(),
        },
    };
    // Ours carries the counters' verdict of the whole test.
    let trusted = doc.get("trusted").and_then(Value::as_bool);
    let facts = super::Facts::of_json(doc);
    let gbits = doc
        .get("results")
        .and_then(|r| r.get("BW_unit"))
        .and_then(Value::as_str)
        .is_some_and(|u| u.contains("Gb"));
    rows.into_iter()
        .filter_map(|r| {
            let mut m = Measurement::new(Source::Perftest, Kind::Summary);
            m.bench = title.bench.clone();
            m.op = title.op.clone();
            m.role = label.map(str::to_string);
            m.trusted = trusted;
            m.facts = facts.clone();
            m.size = num(r, "MsgSize").map(|v| v as u64);
            m.postlist = Some(postlist);
            let k = if gbits { MBPS_PER_GBPS } else { 1.0 };
            m.metrics
                .set_opt(Metric::BwMbps, num(r, "BW_average").map(|v| v * k));
            m.metrics.set_opt(Metric::Mops, num(r, "MsgRate"));
            m.metrics.set_opt(Metric::LatMinUs, num(r, "t_min"));
            m.metrics.set_opt(Metric::LatMaxUs, num(r, "t_max"));
            m.metrics.set_opt(Metric::LatMedianUs, num(r, "t_typical"));
            m.metrics.set_opt(Metric::LatAvgUs, num(r, "t_avg"));
            m.metrics.set_opt(Metric::LatP99Us, num(r, "percentile_99"));
            m.metrics
                .set_opt(Metric::LatP999Us, num(r, "percentile_99.9"));
            (!m.metrics.is_empty()).then_some(m)
        })
        .collect()
}
