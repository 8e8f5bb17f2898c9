//! Host tests of `perf::channel`.

use super::*;

fn attention() -> Attention {
    crate::control::install_stop_signals().unwrap()
}

#[test]
fn versions_read_as_atof_does() {
    assert_eq!(leading_number("6.06"), 6.06);
    assert_eq!(leading_number("5.70\0junk"), 5.70);
    assert_eq!(leading_number("6.29 rdma"), 6.29);
    assert_eq!(leading_number("x"), 0.0);
    assert_eq!(leading_number("1.2.3"), 1.2);
}

/// Both ends of every exchange, through a real socket pair on the loopback.
#[test]
fn client_and_server_exchange_in_perftests_order() {
    exchange_over(Family::V4, "127.0.0.1");
}

/// The same over IPv6 (`--ipv6-addr` on both sides): the server on `::`, the client to `::1`.
#[test]
fn the_exchange_runs_over_ipv6_with_ipv6_addr() {
    exchange_over(Family::V6, "::1");
}

fn exchange_over(family: Family, host: &'static str) {
    let listener = TcpListener::bind((host, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let server = std::thread::spawn(move || {
        let mut ch = Channel::accept(None, family, port, attention()).unwrap();
        ch.exchange_versions().unwrap();
        let sys = ch.exchange_sys_data(4096, 64).unwrap();
        let mtu = ch.exchange_mtu(5).unwrap();
        let me = Dest {
            qpn: 7,
            ..Dest::default()
        };
        let peer = ch.hand_shake(&me, true, Wait::Setup).unwrap();
        let rep = ch
            .exchange_bw_report(&BwReport {
                size: 1,
                ..BwReport::default()
            })
            .unwrap();
        ch.close(&me, true).unwrap();
        (sys, mtu, peer.qpn, rep)
    });
    let timeout = Duration::from_secs(5);
    let mut ch = Channel::connect(None, family, host, port, timeout, attention()).unwrap();
    ch.exchange_versions().unwrap();
    assert_eq!(ch.peer_version(), 6.06);
    assert_eq!(ch.exchange_sys_data(8192, 64).unwrap(), (8192, 64));
    assert_eq!(ch.exchange_mtu(3).unwrap(), 3);
    let me = Dest {
        qpn: 9,
        ..Dest::default()
    };
    assert_eq!(ch.hand_shake(&me, true, Wait::Setup).unwrap().qpn, 7);
    let mine = BwReport {
        size: 32,
        iters: 5000,
        bw_peak: 1.5,
        bw_avg: 1.25,
        msg_rate: 0.04,
    };
    assert_eq!(ch.exchange_bw_report(&mine).unwrap().size, 1);
    ch.close(&me, true).unwrap();
    let (sys, mtu, qpn, rep) = server.join().unwrap();
    assert_eq!((sys, mtu, qpn, rep), ((8192, 64), 3, 9, mine));
}

#[test]
fn nobody_listening_is_a_bounded_wait() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let t0 = Instant::now();
    let e = Channel::connect(
        None,
        Family::V4,
        "127.0.0.1",
        port,
        Duration::from_millis(300),
        attention(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(e.contains("no server answered at 127.0.0.1"), "{e}");
}
