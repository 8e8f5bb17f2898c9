//! Checking rc-swarm's output: the machine's average line and its JSON summary.

#![allow(dead_code)]

/// Checks one process's output: `Machine <m> average: <x> M/s` with x > 0, and a JSON machine
/// summary whose every thread made `qps` QPs and connected `connected` of them. Returns x.
pub fn check_machine(out: &str, machine: usize, threads: usize, qps: u64, connected: u64) -> f64 {
    let prefix = format!("Machine {machine} average: ");
    let line = out
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no '{prefix}' line:\n{out}"));
    let avg: f64 = line[prefix.len()..]
        .trim_end_matches(" M/s")
        .parse()
        .unwrap_or_else(|_| panic!("unparsable average: {line}"));
    assert!(avg > 0.0, "machine {machine} averaged nothing:\n{out}");
    let json = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("valid JSON"))
        .find(|v| v["machine_summary"] == true)
        .unwrap_or_else(|| panic!("no JSON machine summary:\n{out}"));
    assert_eq!(json["machine"], machine as u64, "{json}");
    let per_thread = json["per_thread"].as_array().expect("per_thread array");
    assert_eq!(per_thread.len(), threads, "{json}");
    for t in per_thread {
        assert_eq!(t["qps"], qps, "QPs made per thread: {json}");
        assert_eq!(
            t["connected_qps"], connected,
            "QPs connected per thread: {json}"
        );
    }
    let mops = json["average_mops"].as_f64().expect("average_mops");
    assert!(
        (mops - avg).abs() <= avg * 0.01 + 0.00005,
        "JSON {mops} vs line {avg}"
    );
    // Every worker reported its rate at least once.
    for t in 0..threads {
        let gid = machine * threads + t;
        assert!(
            out.contains(&format!("main: Worker {gid}: ")),
            "no rate line for worker {gid}:\n{out}"
        );
    }
    avg
}
