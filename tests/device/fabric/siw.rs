//! Soft-iWARP (siw0, next to rxe0 in the fabric boot: `softroce.sh run --siw`): the perftest
//! tools connect through RDMA CM ours↔ours and against Debian's perftest in both directions
//! (send-bw with perftest's credit exchange);
//! what iWARP cannot do (QPs moved by hand, UC/UD, atomics) is refused in one line, at once.

use crate::common::perftest_pair;

use std::process::Command;
use std::time::{Duration, Instant};

use perftest_pair::{check_lat, env, pair, row_of, run_bw, On, Who, OURS};

fn siw() -> On {
    On {
        device: env("SOFTROCE_SIW_DEVICE"),
        gid_index: None,
        ip: env("SOFTROCE_SIW_IP"),
    }
}

#[test]
fn the_device_is_iwarp() {
    let on = siw();
    let o = Command::new("ibv_devinfo")
        .args(["-d", &on.device])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("transport:\t\t\tiWARP"), "{text}");
}

#[test]
fn bw_tools_connect_through_rdma_cm_ours_and_perftest() {
    let on = siw();
    for (tool, server, client) in [
        ("write-bw", Who::Ours, Who::Ours),
        ("read-bw", Who::Ours, Who::Ours),
        ("write-bw", Who::Perftest, Who::Ours),
        ("write-bw", Who::Ours, Who::Perftest),
        ("read-bw", Who::Perftest, Who::Ours),
        ("read-bw", Who::Ours, Who::Perftest),
        // SENDs paced by perftest's credit exchange (iWARP has no RNR retry).
        ("send-bw", Who::Ours, Who::Ours),
        ("send-bw", Who::Perftest, Who::Ours),
        ("send-bw", Who::Ours, Who::Perftest),
    ] {
        run_bw(&on, tool, server, client, &["-R"]);
    }
    // Each QP has its own credit word.
    run_bw(&on, "send-bw", Who::Ours, Who::Ours, &["-R", "-q", "2"]);
}

#[test]
fn lat_tools_connect_through_rdma_cm_ours_and_perftest() {
    let on = siw();
    for (tool, server, client) in [
        ("write-lat", Who::Ours, Who::Ours),
        ("read-lat", Who::Ours, Who::Ours),
        ("send-lat", Who::Ours, Who::Ours),
        ("write-lat", Who::Perftest, Who::Ours),
        ("write-lat", Who::Ours, Who::Perftest),
        ("read-lat", Who::Ours, Who::Perftest),
        ("send-lat", Who::Perftest, Who::Ours),
        ("send-lat", Who::Ours, Who::Perftest),
    ] {
        let args = ["-R", "-n", "100", "-s", "8"];
        let (so, co) = pair(&on, tool, server, client, &args);
        check_lat(tool, &so, &co, &[8], 100);
        println!("{}", row_of(tool, server, client, &co, 8));
    }
}

/// Runs `cmd`; it must fail at once (no device resource made, no peer waited for) with one line
/// on stderr that contains `want`. "At once" is a second on a host; the emulated guest starts a
/// process and opens its devices several times slower (1.16 s was seen in one CI boot), and any
/// wait for a peer would last the connect timeout (10 s for the tools, 60 s for the benchmarks),
/// so the bound here is 5 s.
fn refused(cmd: &mut Command, want: &str) {
    let t0 = Instant::now();
    let o = cmd.output().unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{cmd:?} ran:\n{err}");
    assert!(err.contains(want), "{cmd:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{cmd:?}: {err}");
    assert!(took < Duration::from_secs(5), "{cmd:?} took {took:?}");
}

#[test]
fn what_iwarp_cannot_do_is_refused_in_one_line() {
    let on = siw();
    let d = on.device.as_str();
    let iwarp = format!("{d} is an iWARP device");
    // The paper benchmarks connect their QPs by hand (QP numbers through the registry).
    for bin in [
        env!("CARGO_BIN_EXE_rw-tput-sender"),
        env!("CARGO_BIN_EXE_ud-sender"),
        env!("CARGO_BIN_EXE_herd"),
    ] {
        refused(
            Command::new(bin).args(["--device", d, "--registry", "127.0.0.1:1"]),
            &format!("{iwarp}: its QPs connect only through RDMA CM"),
        );
    }
    let tool = |args: &[&str]| {
        let mut c = Command::new(OURS);
        c.args(args).args(["-d", d]);
        c
    };
    refused(
        &mut tool(&["write-bw"]),
        &format!("{iwarp}: its QPs connect only through RDMA CM: add -R"),
    );
    refused(
        &mut tool(&["send-lat", "-R", "-c", "UD"]),
        &format!("-c UD: {iwarp}, which has RC QPs only"),
    );
    refused(
        &mut tool(&["send-bw", "-R", "-b"]),
        &format!("-b: {iwarp}, where send-bw paces its SENDs with perftest's credit exchange"),
    );
    refused(
        &mut tool(&["atomic-bw", "-R"]),
        &format!("{d} has no RDMA atomics"),
    );
    refused(
        &mut tool(&["send-bw", "-R", "--use-srq"]),
        &format!("--use-srq: {iwarp}, where perftest's credit words keep each SEND"),
    );
}

/// Through the library: a UD or UC QP on siw is refused before `ibv_create_qp`, in one line
/// naming the device, its transport and the QP types it has (a provider's bare EOPNOTSUPP
/// otherwise); an RC QP is made.
#[test]
fn a_qp_type_the_transport_lacks_is_refused_by_name() {
    use rdma_bench::verbs::{CompletionQueue, Port, ProtectionDomain, QpCaps, QpType, QueuePair};
    let on = siw();
    let port = Port::open_by(Some(&on.device), 0, None).expect("siw's port opens");
    let pd = ProtectionDomain::new(port.context()).expect("ibv_alloc_pd");
    let cq = CompletionQueue::new(port.context(), 16).expect("ibv_create_cq");
    let caps = QpCaps {
        max_send_wr: 16,
        max_recv_wr: 16,
        ..QpCaps::default()
    };
    for t in [QpType::Ud, QpType::Uc] {
        for ex in [false, true] {
            let made = if ex {
                QueuePair::new_ex(&pd, &port, &cq, &cq, t, caps)
            } else {
                QueuePair::new(&pd, &port, &cq, &cq, t, caps)
            };
            let Err(e) = made else {
                panic!("siw made a {} QP (ex: {ex})", t.name())
            };
            let e = e.to_string();
            let want = format!(
                "{} (driver software, iWARP) has RC QPs only: no {} QP can be made on it",
                on.device,
                t.name()
            );
            assert!(e.starts_with(&want), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
    QueuePair::new(&pd, &port, &cq, &cq, QpType::Rc, caps).expect("an RC QP on siw");
}
