//! Host tests of `perf::settings`.
use super::*;

fn args(f: impl FnOnce(&mut PerfArgs)) -> PerfArgs {
    let mut a = PerfArgs {
        connection: "RC".into(),
        ib_port: 1,
        port: 18515,
        qp_timeout: 14,
        ..PerfArgs::default()
    };
    f(&mut a);
    a
}

fn err(tool: Tool, f: impl FnOnce(&mut PerfArgs)) -> String {
    Settings::resolve(tool, &args(f)).unwrap_err().to_string()
}

#[test]
fn defaults_are_perftests_per_tool() {
    let s = Settings::resolve(Tool::WRITE_BW, &args(|_| {})).unwrap();
    assert_eq!(s.sizes, vec![65536]);
    assert_eq!(s.length, Length::Iters(5000));
    // 64 KiB messages: perftest signals every WR.
    assert_eq!((s.tx_depth, s.cq_mod, s.post_list, s.qps), (128, 1, 1, 1));
    let s = Settings::resolve(Tool::WRITE_BW, &args(|a| a.size = Some(32))).unwrap();
    assert_eq!(s.cq_mod, 100);
    let s = Settings::resolve(Tool::READ_LAT, &args(|_| {})).unwrap();
    assert_eq!((s.sizes[0], s.tx_depth, s.cq_mod), (2, 1, 1));
    let s = Settings::resolve(Tool::SEND_BW, &args(|a| a.iters = Some(101))).unwrap();
    // rx depth clamped to the iterations, then made even.
    assert_eq!(s.rx_depth, 102);
    let s = Settings::resolve(Tool::ATOMIC_BW, &args(|_| {})).unwrap();
    assert_eq!((s.sizes[0], s.atomic), (8, AtomicType::FetchAndAdd));
    let s = Settings::resolve(Tool::WRITE_BW, &args(|a| a.all = true)).unwrap();
    assert_eq!((s.sizes.len(), s.sizes[0], s.alloc_size), (23, 2, MAX_SIZE));
    let s = Settings::resolve(Tool::WRITE_BW, &args(|a| a.duration = Some(5))).unwrap();
    assert_eq!(s.length, Length::Duration { secs: 5, margin: 1 });
    assert!(s.no_peak);
}

#[test]
fn post_list_rules() {
    let s = Settings::resolve(
        Tool::WRITE_BW,
        &args(|a| {
            a.size = Some(32);
            a.post_list = Some(16);
            a.iters = Some(1024);
        }),
    )
    .unwrap();
    assert_eq!(s.cq_mod, 16);
    assert_eq!(s.notices.len(), 1);
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.post_list = Some(16);
            a.size = Some(32);
        }),
        "Number of iterations must be a multiple of post list size"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.post_list = Some(16);
            a.iters = Some(1024);
            a.cq_mod = Some(5);
        }),
        "Post list size must be a multiple of CQ moderation"
    );
    assert_eq!(
        err(Tool::WRITE_LAT, |a| a.post_list = Some(2)),
        "Post list is supported in BW tests only"
    );
    assert!(err(Tool::WRITE_BW, |a| {
        a.post_list = Some(32);
        a.iters = Some(1024);
        a.tx_depth = Some(16);
    })
    .starts_with("post list 32 is deeper than the send queue"));
}

#[test]
fn refusals_name_what_perftest_refuses() {
    assert_eq!(
        err(Tool::ATOMIC_BW, |a| a.size = Some(16)),
        "Message size cannot be changed for Atomic tests"
    );
    assert_eq!(
        err(Tool::READ_BW, |a| a.inline_size = Some(16)),
        "Inline feature not available on READ/Atomic verbs"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.connection = "UD".into()),
        "UD connection only possible in SEND verb"
    );
    assert_eq!(
        err(Tool::READ_BW, |a| a.connection = "UC".into()),
        "UC connection not possible in READ/ATOMIC verbs"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.connection = "UC".into();
            a.rdma_cm = true;
        }),
        "UC is not supported in librdmacm"
    );
    let uc = Settings::resolve(Tool::SEND_BW, &args(|a| a.connection = "UC".into())).unwrap();
    assert_eq!((uc.qp_type, uc.rx_depth), (QpType::Uc, 1000));
    assert_eq!(
        err(Tool::WRITE_LAT, |a| a.qps = Some(2)),
        "Multiple QPs only available on bw tests"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.iters = Some(3)),
        "-n/--iters 3: Iteration num should be between 5 and 100000000"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.outs = Some(4)),
        "Setting Outstanding reads only available on READ verb"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.mtu = Some(1500)),
        "Invalid MTU - 1500: choose from 256, 512, 1024, 2048, 4096"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.duration = Some(4);
            a.margin = Some(2);
        }),
        "please check that DURATION > 2*MARGIN"
    );
}

#[test]
fn ud_follows_perftests_rules() {
    let ud = |f: fn(&mut PerfArgs)| {
        Settings::resolve(
            Tool::SEND_BW,
            &args(|a| {
                a.connection = "UD".into();
                f(a);
            }),
        )
    };
    let s = ud(|_| {}).unwrap();
    // All RECVs up front; the large-message CQ moderation rule skips UD.
    assert_eq!((s.qp_type, s.rx_depth, s.cq_mod), (QpType::Ud, 1000, 100));
    let s = ud(|a| a.inline_size = Some(900)).unwrap();
    assert_eq!(s.inline_request, Some(884));
    assert!(s.notices[0].contains("Setting inline size to 884"));
    assert_eq!(ud(|a| a.rdma_cm = true).unwrap().qp_type, QpType::Ud);

    // The default size shrinks to the MTU, a sweep stops at it, a larger -s is refused.
    let mut s = ud(|_| {}).unwrap();
    let notice = s.fit_ud_to_mtu(1024).unwrap().unwrap();
    assert_eq!((s.sizes.clone(), s.alloc_size), (vec![1024], 1024));
    assert!(notice.contains("Max msg size in UD is MTU 1024"));
    let mut s = ud(|a| a.all = true).unwrap();
    s.fit_ud_to_mtu(1024).unwrap();
    assert_eq!(s.sizes.last(), Some(&1024));
    assert_eq!(s.sizes.len(), 10);
    let mut s = ud(|a| a.size = Some(2048)).unwrap();
    assert_eq!(
        s.fit_ud_to_mtu(1024).unwrap_err().to_string(),
        "Max message size in UD cannot be greater than MTU"
    );
    let mut s = ud(|a| a.size = Some(512)).unwrap();
    assert_eq!(s.fit_ud_to_mtu(1024).unwrap(), None);
}

#[test]
fn send_bw_runs_both_ways_and_infinitely_but_not_both() {
    let b = Settings::resolve(Tool::SEND_BW, &args(|a| a.bidirectional = true)).unwrap();
    // Both sides post with -b: the server keeps its peak.
    assert!(b.duplex && !b.no_peak);
    let inf = Settings::resolve(Tool::SEND_BW, &args(|a| a.run_infinitely = true)).unwrap();
    assert_eq!(inf.length, Length::Duration { secs: 5, margin: 0 });
    assert_eq!(
        err(Tool::SEND_BW, |a| {
            a.run_infinitely = true;
            a.bidirectional = true;
        }),
        "run_infinitely mode is not supported in SEND Bidirectional BW test"
    );
}

#[test]
fn events_and_cpu_util_follow_perftests_rules() {
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.events = true),
        "Events feature not available on WRITE verb"
    );
    assert_eq!(
        err(Tool::READ_BW, |a| a.vector = Some(1)),
        "Events must be enabled to select a completion vector"
    );
    assert_eq!(
        err(Tool::SEND_BW, |a| {
            a.events = true;
            a.duration = Some(4);
        }),
        "Duration mode doesn't work with events."
    );
    let e = Settings::resolve(
        Tool::READ_BW,
        &args(|a| {
            a.events = true;
            a.vector = Some(1);
        }),
    )
    .unwrap();
    // Events keep CQ moderation for large messages, as perftest.
    assert_eq!((e.events, e.cq_mod), (Some(1), 100));
    assert_eq!(
        Settings::resolve(Tool::READ_BW, &args(|a| a.events = true))
            .unwrap()
            .events,
        Some(0)
    );
    // --cpu_util needs -D: otherwise perftest's warning, and no column.
    let s = Settings::resolve(Tool::WRITE_BW, &args(|a| a.cpu_util = true)).unwrap();
    assert!(!s.cpu_util);
    assert_eq!(
        s.notices,
        vec![" CPU Utilization works only with Duration mode."]
    );
    let s = Settings::resolve(
        Tool::WRITE_BW,
        &args(|a| {
            a.cpu_util = true;
            a.duration = Some(4);
        }),
    )
    .unwrap();
    assert!(s.cpu_util);
}

#[test]
fn perftest_45_flags_resolve_with_its_refusals() {
    // --output: one word per kind of test, perftest's messages otherwise.
    let s = Settings::resolve(
        Tool::WRITE_BW,
        &args(|a| a.output = Some("message_rate".into())),
    );
    assert_eq!(s.unwrap().output, Some(Output::MessageRate));
    let s = Settings::resolve(Tool::SEND_LAT, &args(|a| a.output = Some("latency".into())));
    assert_eq!(s.unwrap().output, Some(Output::Latency));
    assert_eq!(
        err(Tool::READ_BW, |a| a.output = Some("latency".into())),
        "Output verbosity level for BW can be: bandwidth, message_rate"
    );
    assert_eq!(
        err(Tool::READ_LAT, |a| a.output = Some("bandwidth".into())),
        "Output verbosity level for LAT can be: latency"
    );
    assert!(
        err(Tool::READ_LAT, |a| a.output = Some("loud".into())).starts_with("Invalid verbosity")
    );
    // --latency_gap: latency tests only (0 anywhere).
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.latency_gap = Some(5)),
        "Latency gap feature is only for latency tests"
    );
    assert!(Settings::resolve(Tool::WRITE_BW, &args(|a| a.latency_gap = Some(0))).is_ok());
    // --recv_post_list: BW tests; the iterations a multiple of it; a chain fits the queue.
    let s = Settings::resolve(Tool::SEND_BW, &args(|a| a.recv_post_list = Some(8))).unwrap();
    assert_eq!(s.recv_post_list, 8);
    assert_eq!(
        err(Tool::SEND_LAT, |a| a.recv_post_list = Some(2)),
        "Receive post list is supported in BW tests only"
    );
    assert_eq!(
        err(Tool::SEND_BW, |a| {
            a.recv_post_list = Some(3);
            a.iters = Some(1000);
        }),
        "Number of iterations must be a multiple of receive post list size"
    );
    assert!(err(Tool::SEND_BW, |a| {
        a.recv_post_list = Some(100);
        a.rx_depth = Some(50);
    })
    .contains("longer than the receive queue (-r 50)"));
    // ODP: not with atomics or UC (perftest's refusals).
    assert_eq!(
        err(Tool::ATOMIC_BW, |a| a.odp = true),
        "ODP does not support ATOMICS for now"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.odp = true;
            a.connection = "UC".into();
        }),
        "ODP does not support UC"
    );
    // --force-link, --dlid, --mmap-offset.
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.force_link = Some("roce".into())),
        "Invalid link layer value should be IB or ETHERNET."
    );
    let s = Settings::resolve(Tool::WRITE_BW, &args(|a| a.force_link = Some("ib".into())));
    assert_eq!(s.unwrap().force_link, Some(ForcedLink::Ib));
    assert!(err(Tool::WRITE_BW, |a| a.dlid = Some(70000)).contains("a LID is 16 bits"));
    assert!(err(Tool::WRITE_BW, |a| a.mmap_offset = Some(4096)).contains("add --mmap FILE"));
    // -w/-y judge BW results; --perform_warm_up is a no-op where perftest ignores it.
    assert!(err(Tool::WRITE_LAT, |a| a.limit_bw = Some(1.0)).contains("BW tests only"));
    let s = Settings::resolve(Tool::SEND_BW, &args(|a| a.perform_warm_up = true)).unwrap();
    assert!(!s.warm_up);
    let s = Settings::resolve(Tool::READ_BW, &args(|a| a.perform_warm_up = true)).unwrap();
    assert!(s.warm_up);
}

#[test]
fn rate_limits_as_perftest_resolves_them() {
    use crate::perf::rate::RateUnits;
    let s = Settings::resolve(
        Tool::WRITE_BW,
        &args(|a| {
            a.rate_limit = Some("2".into());
            a.rate_limit_type = Some("SW".into());
            a.rate_units = Some("M".into());
        }),
    )
    .unwrap();
    let r = s.rate.unwrap();
    assert_eq!(
        (r.hw, r.units, r.burst, r.rate),
        (false, RateUnits::MegaBytes, 128, 2.0)
    );
    // --rate_limit alone is HW, which takes perftest's static rates only.
    let s = Settings::resolve(Tool::READ_BW, &args(|a| a.rate_limit = Some("10".into()))).unwrap();
    assert!(s.rate.unwrap().hw && !s.rate.unwrap().hw_explicit);
    assert!(err(Tool::READ_BW, |a| a.rate_limit = Some("7".into()))
        .contains("Unknown rate limit value"));
    assert_eq!(
        err(Tool::SEND_BW, |a| {
            a.rate_limit = Some("1".into());
            a.rate_limit_type = Some("SW".into());
            a.bidirectional = true;
        }),
        "SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND tests"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.burst_size = Some(4)),
        "Can't enable burst mode when rate limiter is off"
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.rate_limit = Some("10".into());
            a.rate_limit_type = Some("PP".into());
        }),
        "Packet Pacing is only supported for Raw Ethernet."
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| {
            a.rate_limit = Some("10".into());
            a.rate_units = Some("p".into());
        }),
        "Failed: pps rate limit units is not supported when setting HW rate limit"
    );
    assert!(
        err(Tool::WRITE_BW, |a| a.rate_limit_type = Some("SW".into())).contains("add --rate_limit")
    );
    // Over Ethernet an implied HW limiter becomes SW; one asked for by name fails, as perftest's.
    let implied = Settings::resolve(Tool::WRITE_BW, &args(|a| a.rate_limit = Some("10".into())));
    let r = implied
        .unwrap()
        .rate
        .unwrap()
        .on_link("rxe0", true)
        .unwrap();
    assert!(!r.hw);
    let named = Settings::resolve(
        Tool::WRITE_BW,
        &args(|a| {
            a.rate_limit = Some("10".into());
            a.rate_limit_type = Some("HW".into());
        }),
    );
    let e = named
        .unwrap()
        .rate
        .unwrap()
        .on_link("rxe0", true)
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("The QP failed to accept HW rate limit"),
        "{e}"
    );
}

#[test]
fn reversed_makes_the_server_post() {
    let server = Settings::resolve(Tool::WRITE_BW, &args(|a| a.reversed = true)).unwrap();
    assert!(server.is_client, "the server posts");
    let client = Settings::resolve(
        Tool::SEND_BW,
        &args(|a| {
            a.reversed = true;
            a.server = Some("peer".into());
        }),
    )
    .unwrap();
    // The client receives SENDs now, and a receiver keeps no peak, as perftest's server.
    assert!(!client.is_client && client.no_peak);
    assert_eq!(
        err(Tool::WRITE_LAT, |a| a.reversed = true),
        "--reversed is only available in BW tests"
    );
    for cm in [true, false] {
        assert_eq!(
            err(Tool::READ_BW, |a| {
                a.reversed = true;
                a.rdma_cm = cm;
                a.comm_rdma_cm = !cm;
            }),
            "--reversed cannot go with -R or -z: RDMA CM's roles would be reversed too"
        );
    }
}

#[test]
fn an_srq_is_made_where_perftest_receives() {
    let srq = |tool: Tool, f: fn(&mut PerfArgs)| {
        let s = Settings::resolve(
            tool,
            &args(|a| {
                a.use_srq = true;
                f(a)
            }),
        )
        .unwrap();
        (s.use_srq, s.srq_here)
    };
    // send-bw: the server receives, the client only with -b; send-lat: both.
    assert_eq!(srq(Tool::SEND_BW, |_| {}), (true, true));
    assert_eq!(
        srq(Tool::SEND_BW, |a| a.server = Some("peer".into())),
        (true, false)
    );
    assert_eq!(
        srq(Tool::SEND_BW, |a| {
            a.server = Some("peer".into());
            a.bidirectional = true;
        }),
        (true, true)
    );
    assert_eq!(
        srq(Tool::SEND_LAT, |a| a.server = Some("peer".into())),
        (true, true)
    );
    assert_eq!(
        err(Tool::WRITE_BW, |a| a.use_srq = true),
        "Using SRQ only avavilible in SEND tests."
    );
    assert_eq!(
        err(Tool::SEND_BW, |a| {
            a.use_srq = true;
            a.qps = Some(4);
            a.rx_depth = Some(2);
        }),
        "Using SRQ depth should be greater than number of QPs."
    );
}

#[test]
fn one_mr_per_qp_is_for_the_bw_tests() {
    for tool in [
        Tool::WRITE_BW,
        Tool::READ_BW,
        Tool::SEND_BW,
        Tool::ATOMIC_BW,
    ] {
        let s = Settings::resolve(tool, &args(|a| a.mr_per_qp = true)).unwrap();
        assert!(s.mr_per_qp, "{}", tool.name());
    }
    assert_eq!(
        err(Tool::WRITE_LAT, |a| a.mr_per_qp = true),
        "--mr_per_qp is only available in BW tests"
    );
}

#[test]
fn multicast_runs_on_ud_with_perftests_groups_and_refusals() {
    let group = |tool: Tool, f: fn(&mut PerfArgs)| {
        let s = Settings::resolve(
            tool,
            &args(|a| {
                a.mcg = true;
                f(a)
            }),
        )
        .unwrap();
        (s.qp_type, s.mcast_group.map(|g| g.0))
    };
    let server = [255, 1, 0, 0, 0, 2, 201, 133, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut client = server;
    client[15] = 1;
    assert_eq!(group(Tool::SEND_BW, |_| {}), (QpType::Ud, Some(server)));
    assert_eq!(
        group(Tool::SEND_LAT, |a| a.server = Some("peer".into())),
        (QpType::Ud, Some(client))
    );
    let v4 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 239, 1, 1, 1];
    assert_eq!(
        group(Tool::SEND_BW, |a| {
            a.connection = "RC".into();
            a.mgid = Some("0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:0x1".into());
        }),
        (QpType::Ud, Some(v4))
    );
    let refusal = |tool: Tool, f: fn(&mut PerfArgs)| {
        err(tool, |a| {
            a.mcg = true;
            f(a)
        })
    };
    assert_eq!(
        refusal(Tool::WRITE_BW, |_| {}),
        "MultiCast feature only available on SEND verb"
    );
    assert_eq!(
        refusal(Tool::SEND_BW, |a| a.bidirectional = true),
        "Bidirectional mode not supported in multicast"
    );
    assert_eq!(
        refusal(Tool::SEND_BW, |a| a.qps = Some(2)),
        "Only 1 QP supported in multicast"
    );
    assert_eq!(
        refusal(Tool::SEND_LAT, |a| a.rdma_cm = true),
        "Perftest still doesn't support Multicast with rdma_cm"
    );
    assert!(refusal(Tool::SEND_BW, |a| a.mgid = Some("1:2:3".into()))
        .starts_with("-M/--MGID \"1:2:3\": give 16 numbers"));
    assert!(refusal(Tool::SEND_BW, |a| a.mgid =
        Some("0:0:0:0:0:0:0:0:0:0:255:255:10:1:1:1".into()))
    .contains("is not a multicast group"));
    assert_eq!(
        err(Tool::SEND_BW, |a| a.mgid =
            Some("255:1:0:0:0:0:0:0:0:0:0:0:0:0:0:1".into())),
        "-M/--MGID names the group of -g: add -g"
    );
}
