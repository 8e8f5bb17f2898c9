//! The counters read from copied sysfs trees (made here), their deltas, classes and verdicts.

use super::*;

/// A sysfs tree of one port under a fresh temp dir: `hw` and `ib` counters, an optional netdev.
fn tree(tag: &str, hw: &[(&str, u64)], ib: &[(&str, u64)], net: Option<&[(&str, u64)]>) -> PathBuf {
    let root =
        std::env::temp_dir().join(format!("rdma-bench-counters-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let port = root.join("class/infiniband/rxe0/ports/1");
    write(&port.join("hw_counters"), hw);
    if !ib.is_empty() {
        write(&port.join("counters"), ib);
    }
    if let Some(net) = net {
        std::fs::create_dir_all(port.join("gid_attrs/ndevs")).unwrap();
        std::fs::write(port.join("gid_attrs/ndevs/0"), "eth0\n").unwrap();
        write(&root.join("class/net/eth0/statistics"), net);
        std::fs::write(root.join("class/net/eth0/carrier_changes"), "2\n").unwrap();
    }
    root
}

fn write(dir: &Path, values: &[(&str, u64)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (k, v) in values {
        std::fs::write(dir.join(k), format!("{v}\n")).unwrap();
    }
}

fn rxe0() -> PortRef {
    PortRef {
        device: "rxe0".into(),
        port: 1,
    }
}

#[test]
fn a_lossy_run_is_questionable_and_says_which_counters_moved() {
    let root = tree(
        "lossy",
        &[
            ("duplicate_request", 10),
            ("sent_pkts", 100),
            ("link_downed", 0),
        ],
        &[],
        Some(&[("rx_dropped", 1), ("tx_bytes", 1000)]),
    );
    let w = Watch::start(&root, &[rxe0(), rxe0()], Tolerance::default());
    write(
        &root.join("class/infiniband/rxe0/ports/1/hw_counters"),
        &[
            ("duplicate_request", 576),
            ("sent_pkts", 9100),
            ("link_downed", 0),
        ],
    );
    write(
        &root.join("class/net/eth0/statistics"),
        &[("tx_bytes", 5000)],
    );
    let v = w.finish();
    assert_eq!(
        v.reports.len(),
        1,
        "one report per port, however often it was opened"
    );
    let r = &v.reports[0];
    assert_eq!(
        r.line(),
        "main: counters rxe0:1: retransmission duplicate_request +566; questionable: retransmission"
    );
    assert_eq!(v.trusted(), Some(false));
    let j: serde_json::Value = serde_json::from_str(&v.json().finish()).unwrap();
    assert_eq!(j["counters"]["rxe0:1"]["duplicate_request"], 566);
    assert_eq!(j["counters"]["rxe0:1"]["sent_pkts"], 9000);
    assert_eq!(j["counters"]["rxe0:1"]["net:tx_bytes"], 4000);
    assert_eq!(j["questionable"], serde_json::json!(["retransmission"]));
    assert_eq!(j["trusted"], false);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_clean_run_is_trusted_and_congestion_is_reported_not_flagged() {
    let root = tree(
        "clean",
        &[("np_cnp_sent", 5), ("sent_pkts", 1)],
        &[("port_xmit_data", 7), ("link_downed", 1)],
        None,
    );
    let w = Watch::start(&root, &[rxe0()], Tolerance::default());
    write(
        &root.join("class/infiniband/rxe0/ports/1/hw_counters"),
        &[("np_cnp_sent", 9), ("sent_pkts", 50)],
    );
    let v = w.finish();
    assert_eq!(
        v.reports[0].line(),
        "main: counters rxe0:1: congestion np_cnp_sent +4"
    );
    assert_eq!(v.trusted(), Some(true));
    // A tolerance turns congestion into a flagged class, and lets retransmissions pass.
    let t = Tolerance::parse("congestion=3, retransmission=100").unwrap();
    let r = PortReport::of(
        rxe0(),
        &snapshot(&root, &rxe0()),
        &snapshot(&root, &rxe0()),
        &t,
    );
    assert!(r.questionable.is_empty());
    let mut before = snapshot(&root, &rxe0());
    before.values.insert("np_cnp_sent".into(), 0);
    let r = PortReport::of(rxe0(), &before, &snapshot(&root, &rxe0()), &t);
    assert_eq!(r.questionable, [Class::Congestion]);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_port_without_counters_says_so_and_leaves_trust_open() {
    let root =
        std::env::temp_dir().join(format!("rdma-bench-counters-none-{}", std::process::id()));
    std::fs::create_dir_all(root.join("class/infiniband/siw0/ports/1")).unwrap();
    let siw = PortRef {
        device: "siw0".into(),
        port: 1,
    };
    let v = Watch::start(&root, &[siw], Tolerance::default()).finish();
    assert!(
        v.reports[0]
            .line()
            .starts_with("main: counters siw0:1: unavailable (siw0 exposes no port counters"),
        "{}",
        v.reports[0].line()
    );
    assert_eq!(v.trusted(), None);
    let j: serde_json::Value = serde_json::from_str(&v.json().finish()).unwrap();
    assert!(j["counters_unavailable"].as_str().unwrap().contains("siw0"));
    assert!(j.get("trusted").is_none());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn tolerances_refuse_what_they_do_not_know() {
    assert!(Tolerance::parse("retransmission=10,link=off").is_ok());
    assert_eq!(
        Tolerance::parse("retrans=1").unwrap_err(),
        "'retrans' is not a counter class (known: fatal, link, retransmission, rnr, congestion, other, traffic)"
    );
    assert_eq!(
        Tolerance::parse("link").unwrap_err(),
        "'link' is not CLASS=N (e.g. retransmission=100)"
    );
    assert_eq!(
        Tolerance::parse("link=x").unwrap_err(),
        "'x' is not a count (or 'off') for link"
    );
}

#[test]
fn perftests_named_counters_report_their_changes_and_refuse_unknown_names() {
    let root = tree(
        "named",
        &[("out_of_buffer", 3)],
        &[("port_xmit_data", 100)],
        None,
    );
    let mut n = Named::open(
        &root,
        &rxe0(),
        "counters/port_xmit_data,hw_counters/out_of_buffer",
    )
    .unwrap();
    write(
        &root.join("class/infiniband/rxe0/ports/1/counters"),
        &[("port_xmit_data", 160)],
    );
    assert_eq!(
        n.deltas(),
        [
            ("counters/port_xmit_data".to_string(), 60),
            ("hw_counters/out_of_buffer".to_string(), 0)
        ]
    );
    assert_eq!(n.deltas()[0].1, 0, "the next read counts from this one");
    assert_eq!(
        Named::open(&root, &rxe0(), "counters/nope").unwrap_err(),
        "-W/--report-counters: no counter counters/nope on rxe0:1 (available: counters/port_xmit_data, hw_counters/out_of_buffer)"
    );
    assert!(Named::open(&root, &rxe0(), "../../../x").is_err());
    let _ = std::fs::remove_dir_all(&root);
}
