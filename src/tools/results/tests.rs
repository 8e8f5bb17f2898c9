use super::*;

fn mops(p: &Point) -> f64 {
    p.metrics.get(Metric::Mops).unwrap()
}

#[test]
fn original_log_lines_in_their_documented_formats() {
    // rw-tput-sender: per-thread IOPS, and (in red) the total, also in IOPS.
    let log = "# ./rw-tput-sender --size 32 --postlist 4 --do-read 0 --num-threads 2\n\
               main: Server 0: 4000000.00 IOPS\n\
               main: Server 1: 2000000.00 IOPS\n\
               main: Server 0: 6000000.00 IOPS\n\
               main: Server 1: 2000000.00 IOPS\n\
               main: Server 0: 5000000.00 IOPS\n\
               \u{1b}[31mmain: Total throughput = 7000000.00\n\u{1b}[0m";
    let ms = parse(log);
    assert!(ms.iter().all(|m| m.source == Source::Original));
    assert_eq!(ms.iter().filter(|m| m.kind == Kind::Interval).count(), 5);
    assert_eq!(ms.iter().filter(|m| m.kind == Kind::Total).count(), 1);
    let p = points(&ms);
    assert_eq!(p.len(), 1);
    // Thread 0's median 5 Mops, thread 1's 2 Mops.
    assert_eq!(mops(&p[0]), 7.0);
    assert_eq!(
        p[0].key,
        Key {
            op: Some("WRITE".into()),
            size: Some(32),
            postlist: Some(4),
            threads: Some(2)
        }
    );
    assert_eq!(p[0].bench, "rw-tput-sender");
}

#[test]
fn original_units_and_paper_era_mops() {
    let one = |line: &str| {
        let ms = parse(line);
        assert_eq!(ms.len(), 1, "{line}");
        ms[0].metrics.get(Metric::Mops).unwrap()
    };
    assert_eq!(one("main: Client 3: 1.25 M/s"), 1.25);
    assert_eq!(
        one("main: Server 0: 2.50 Mops. Average postlist = 3.00"),
        2.5
    );
    // Paper-era code printed operations per second under "Mops".
    assert_eq!(one("main: Server 0: 4000000.0 Mops"), 4.0);
    assert_eq!(
        one("main: Worker 2: 524288.00 Mops. Average postlist = 1.00"),
        0.524288
    );
    assert_eq!(one("main: Client 1: 3000000.00 IOPS. nb_tx = 12"), 3.0);
    assert_eq!(one("main: Total tput = 12.50 M/s."), 12.5);
    assert_eq!(one("main: Total tput 2000000.00 IOPS."), 2.0);
    assert_eq!(one("main: Machine: 8.00 M/s"), 8.0);
    // Totals alone: their median.
    let p = points(&parse(
        "main: Total throughput = 3000000\nmain: Total throughput = 1000000\nmain: Total throughput = 2000000\n",
    ));
    assert_eq!(mops(&p[0]), 2.0);
    let lat = parse("Average latency = 2.50us, median = 2.25us, 99th = 4.00us\n");
    assert_eq!(
        (
            lat[0].metrics.get(Metric::LatAvgUs),
            lat[0].metrics.get(Metric::LatMedianUs),
            lat[0].metrics.get(Metric::LatP99Us)
        ),
        (Some(2.5), Some(2.25), Some(4.0))
    );
    assert!(parse("main: Server 0: connected\nsomething else: 3 IOPS\n").is_empty());
}

#[test]
fn our_text_summary_and_json_lines() {
    let text = "[server] main: Server 0: 1234567.00 IOPS\n\
                [server] main: Total throughput = 1.2500 Mops\n\
                [client] main: Client threads 0..1: done\n";
    let ms = parse(text);
    assert!(ms.iter().all(|m| m.source == Source::Ours));
    let p = points(&ms);
    assert_eq!(p.len(), 1);
    assert_eq!(mops(&p[0]), 1.25);
    // With JSON lines, the text is dropped and the JSON's shape is the key.
    let json = format!(
        "{text}[server] {}\n[server] {}\n[client] {}\n",
        r#"{"bench":"rw-tput-sender","role":"server","op":"READ","size":64,"postlist":2,"thread":0,"elapsed_s":1,"ops":5,"mops":1.1}"#,
        r#"{"bench":"rw-tput-sender","role":"server","op":"READ","size":64,"postlist":2,"summary":true,"ok":true,"threads":1,"elapsed_s":2,"ops":9,"mops":1.3}"#,
        r#"{"bench":"rw-tput-sender","role":"client","summary":true,"ok":true,"passive":true,"threads":1,"ops":0,"mops":0}"#
    );
    let ms = parse(&json);
    assert_eq!(ms.len(), 2, "{ms:?}");
    let p = points(&ms);
    assert_eq!(p.len(), 1);
    assert_eq!(mops(&p[0]), 1.3);
    assert_eq!(p[0].key.op.as_deref(), Some("READ"));
    assert_eq!((p[0].key.size, p[0].key.postlist), (Some(64), Some(2)));
    // A failed run's summary is no result.
    let failed = r#"{"bench":"rw-tput-sender","role":"server","summary":true,"ok":false,"error":"x","threads":1,"ops":9,"mops":1.3}"#;
    assert!(points(&parse(failed)).is_empty());
}

#[test]
fn sniffing_tells_the_formats_apart() {
    assert_eq!(
        sniff("label,size,metric,unit,n,median,mean,min,max,ci95_low,ci95_high\n"),
        Format::SweepCsv
    );
    assert_eq!(
        sniff("size,rep,ok,metric,unit,value,seconds\n"),
        Format::SweepRunsCsv
    );
    // A sweep without parameters.
    assert_eq!(
        sniff("rep,ok,metric,unit,value,seconds\n"),
        Format::SweepRunsCsv
    );
    assert_eq!(
        sniff("{\n \"test_info\": {},\n \"results\": {}\n}\n"),
        Format::JsonDocument
    );
    assert_eq!(sniff(r#"{"label":"x","points":[]}"#), Format::JsonDocument);
    assert_eq!(
        sniff("{\"bench\":\"x\"}\n{\"bench\":\"y\"}\n"),
        Format::Lines
    );
    assert_eq!(sniff("main: Server 0: 1 IOPS\n"), Format::Lines);
}

#[test]
fn sweep_csv_points_carry_their_params_as_keys() {
    let csv = "label,size,postlist,metric,unit,n,median,mean,min,max,ci95_low,ci95_high\n\
               ours,32,1,mops,Mops,3,1.5,1.5,1,2,0.5,2.5\n\
               ours,32,1,lat_avg_us,us,3,3,3,3,3,3,3\n\
               ours,32,2,mops,Mops,3,2.5,2.5,2,3,1.5,3.5\n";
    let p = points_of_text(csv).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].key.size, p[0].key.postlist), (Some(32), Some(1)));
    assert_eq!(p[0].metrics.get(Metric::LatAvgUs), Some(3.0));
    assert_eq!(mops(&p[1]), 2.5);
    assert!(points_of_text("size,rep,ok,metric,unit,value,seconds\n").is_err());
}

#[test]
fn interleaved_perftest_tables_of_both_sides() {
    // run-local.sh's output of our write-bw (a real recording), without its JSON lines: both
    // sides print the table; the client's row is the result.
    let rec = include_str!("../../../tests/data/compare/ours-write-bw-s32.txt");
    let text: String = rec
        .lines()
        .filter(|l| !l.contains("] {"))
        .map(|l| format!("{l}\n"))
        .collect();
    let ms = parse(&text);
    assert_eq!(ms.len(), 2, "{ms:?}");
    assert!(ms.iter().all(|m| m.source == Source::Perftest));
    assert_eq!(ms[0].bench, "ib_write_bw");
    let p = points(&ms);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].metrics.get(Metric::Mops), Some(0.010023));
    assert_eq!(p[0].metrics.get(Metric::BwMbps), Some(0.31));
    // With the JSON lines, the JSON's precision.
    let p = points(&parse(rec));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].metrics.get(Metric::Mops), Some(0.010023330161922608));
}

#[test]
fn the_side_that_counts_where_both_report() {
    let line = |role: &str, mops: f64| {
        format!(
            r#"{{"bench":"ss-echo","role":"{role}","op":"SEND","size":32,"postlist":1,"summary":true,"ok":true,"threads":2,"mops":{mops}}}"#
        ) + "\n"
    };
    // Two client processes first, then the server: the server's rate is the result.
    let text = line("client", 1.0) + &line("client", 1.5) + &line("server", 2.25);
    let p = points(&parse(&text));
    assert_eq!(p.len(), 1);
    assert_eq!(mops(&p[0]), 2.25);
    // Without a server line, the clients' rates add up.
    let p = points(&parse(&(line("client", 1.0) + &line("client", 1.5))));
    assert_eq!(mops(&p[0]), 2.5);
}

#[test]
fn summaries_carry_their_device_and_counters_and_suite_rows_are_points() {
    let line = r#"{"bench":"rw-tput-sender","role":"server","op":"WRITE","size":32,"postlist":1,"summary":true,"ok":true,"threads":1,"mops":2.0,"counters":{"rxe0:1":{"duplicate_request":566,"sent_pkts":9000}},"questionable":["retransmission"],"trusted":false}"#;
    let p = points(&parse(line));
    assert_eq!(p.len(), 1);
    let f = &p[0].facts;
    assert_eq!((f.device.as_deref(), f.port), (Some("rxe0"), Some(1)));
    assert_eq!(
        f.counters,
        [
            ("rxe0:1".to_string(), "duplicate_request".to_string(), 566.0),
            ("rxe0:1".to_string(), "sent_pkts".to_string(), 9000.0)
        ]
    );
    assert_eq!(f.questionable, ["retransmission"]);
    let csv =
        "bench,role,op,size,postlist,mops,lat_avg_us,lat_median_us,lat_p99_us,flags,trusted\n\
               rw-postlist-latency,server,write,32,16,,4.2,4.1,6.3,--num-threads 1,0\n";
    let p = points_of_suite(csv).unwrap();
    assert_eq!(p[0].key.op.as_deref(), Some("WRITE"));
    assert_eq!(p[0].metrics.get(Metric::LatP99Us), Some(6.3));
    assert_eq!(p[0].params["flags"], "--num-threads 1");
    assert_eq!(p[0].trusted, Some(false));
}
