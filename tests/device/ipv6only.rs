//! An IPv6-only node pair (`softroce.sh run --nodes 2 --ipv6-only`): the fabric has no IPv4
//! address, as on clusters without one. The registry, perftest's exchange (`--ipv6-addr`) and
//! RDMA CM (`-R --ipv6-addr`, RC and UD) all meet over IPv6, with RoCE v2 IPv6 GIDs. Runs on
//! both guests, in step (bench_scripts/test.sh does); outside that testbed it fails, never skips.

use std::net::Ipv6Addr;

use crate::common::bench_run::{check_counting, check_passive, finish};
use crate::common::perftest_pair::{table, BW_HEADER, LAT_HEADER};
use crate::common::twonode::{env, node, outcome, rw_pair, tool_pair, Registry};

#[test]
fn an_ipv6_only_pair_meets_through_the_registry_the_exchange_and_rdma_cm() {
    let ip = env("RDMA_BENCH_IP");
    assert!(
        ip.parse::<Ipv6Addr>().is_ok(),
        "RDMA_BENCH_IP {ip} is not IPv6: this test runs on `softroce.sh run --nodes 2 --ipv6-only`"
    );
    let gid = std::fs::read_to_string(format!(
        "/sys/class/infiniband/{}/ports/1/gids/{}",
        env("RDMA_BENCH_DEVICE"),
        env("RDMA_BENCH_GID_INDEX")
    ))
    .unwrap();
    assert!(
        gid.starts_with("2001:0db8:"),
        "the GID in use is not IPv6: {gid}"
    );

    // The registry on node 0's IPv6 address, `--registry [2001:db8::1]:PORT`; it stays up to
    // the end, so that node 1 never loses it while it still reads it.
    let _reg = Registry::start(11511);
    let pair = rw_pair(&["--size", "32"], "4", "60");
    if node() == 0 {
        let s = finish(pair, "rw-tput-sender server over IPv6");
        check_counting(&s, "Server", 1, "rw-tput-sender", "WRITE");
    } else {
        check_passive(
            &finish(pair, "rw-tput-sender client over IPv6"),
            "rw-tput-sender",
        );
    }

    // perftest's exchange over TCP on IPv6, then RDMA CM on IPv6 (RC, and UD's SIDR).
    let (code, out, err) = outcome(tool_pair(
        "write-bw",
        18711,
        &["--ipv6-addr", "-n", "200", "-s", "64"],
    ));
    assert_eq!(
        code,
        0,
        "write-bw --ipv6-addr on node {}:\n{out}{err}",
        node()
    );
    let (code, lat, err) = outcome(tool_pair(
        "read-lat",
        18712,
        &["--ipv6-addr", "-R", "-n", "100", "-s", "8"],
    ));
    assert_eq!(
        code,
        0,
        "read-lat -R --ipv6-addr on node {}:\n{lat}{err}",
        node()
    );
    assert!(lat.contains("Data ex. method : rdma_cm"), "{lat}");
    let (code, ud, err) = outcome(tool_pair(
        "send-bw",
        18713,
        &["--ipv6-addr", "-R", "-c", "UD", "-n", "100", "-s", "64"],
    ));
    assert_eq!(
        code,
        0,
        "send-bw -R -c UD --ipv6-addr on node {}:\n{ud}{err}",
        node()
    );
    // Each side's table: the BW server prints the client's row; read-lat's server is passive.
    let rows = table(&out, BW_HEADER);
    assert!(
        rows.len() == 1 && rows[0][..2] == [64.0, 200.0] && rows[0][4] > 0.0,
        "{out}"
    );
    let rows = table(&ud, BW_HEADER);
    assert!(
        rows.len() == 1 && rows[0][..2] == [64.0, 100.0] && rows[0][4] > 0.0,
        "{ud}"
    );
    let rows = table(&lat, LAT_HEADER);
    if node() == 1 {
        assert!(
            rows.len() == 1 && rows[0][..2] == [8.0, 100.0] && rows[0][2] > 0.0,
            "{lat}"
        );
    } else {
        assert!(
            rows.is_empty(),
            "read-lat's passive server printed a table:\n{lat}"
        );
    }

    // Without --ipv6-addr the exchange is IPv4 (perftest's default): refused by name, at once.
    let (code, _, err) = if node() == 0 {
        outcome(tool_pair("write-bw", 18714, &["-R", "-n", "10"]))
    } else {
        outcome(tool_pair("write-bw", 18714, &["-n", "10"]))
    };
    assert_ne!(code, 0, "{err}");
    let line = err.lines().last().unwrap_or_default();
    assert!(line.contains("--ipv6-addr"), "node {}: {err}", node());
    if node() == 0 {
        assert!(line.contains("no ACTIVE port of"), "{err}");
    } else {
        assert!(
            line.contains("an IPv6 address, and the exchange is IPv4"),
            "{err}"
        );
    }
}
