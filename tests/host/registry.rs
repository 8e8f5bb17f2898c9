//! The registry against a real memcached. Host-only: no RDMA needed.

use crate::common::memcached;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memcached::Memcached;
use rdma_bench::registry::{now_ms, Registry, Tended, WaitOptions, GRACE};
use rdma_bench::verbs::QpInfo;

fn info(qpn: u32) -> QpInfo {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&[192, 0, 2, 1]);
    QpInfo {
        qpn,
        psn: 3185,
        lid: 0,
        gid,
        buf_addr: 0x1000 * u64::from(qpn),
        buf_size: 8192,
        rkey: 77 + qpn,
        mtu: 3,
        rd_atomic: 16,
    }
}

fn quick(timeout_ms: u64) -> WaitOptions {
    WaitOptions {
        timeout: Duration::from_millis(timeout_ms),
        ..WaitOptions::default()
    }
}

/// Writes a raw value under `key`, bypassing our encoder.
/// One heartbeat: nothing lost, the registry answers.
fn tend_fine(m: &Memcached) {
    match tend(m) {
        Tended::Fine | Tended::Back(_) => {}
        other => panic!("tend: {other:?}"),
    }
}

/// `tend` now, as the report clock calls it, for a test whose registry is on `m`. It looks at
/// every registry of the process: a parallel test's that was just stopped (its handle held
/// alive by this very look) is that test's business and counts as fine here.
fn tend(m: &Memcached) -> Tended {
    match rdma_bench::registry::tend(std::time::Instant::now()) {
        Tended::Unreachable { error, .. } if !error.to_string().contains(&m.addr()) => Tended::Fine,
        other => other,
    }
}

/// `tend` looks at every registry of the process: the tests that watch peers or stop a registry
/// take turns, so that one's loss is not another's.
fn watching() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn raw_set(m: &Memcached, key: &str, value: &[u8]) {
    let mut s = TcpStream::connect(m.addr()).unwrap();
    s.write_all(format!("set {key} 0 0 {}\r\n", value.len()).as_bytes())
        .unwrap();
    s.write_all(value).unwrap();
    s.write_all(b"\r\n").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert_eq!(line, "STORED\r\n");
}

#[test]
fn publish_then_lookup_round_trips() {
    let m = Memcached::start();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    r.publish("server-0", &info(5)).unwrap();
    let e = r.lookup("server-0").unwrap().unwrap();
    assert_eq!(e.info, info(5));
    assert_eq!(e.run_id, r.run_id());
    assert!(r.lookup("server-1").unwrap().is_none());
}

/// A registry reached over IPv6 only (memcached on ::1, no IPv4 listener), as `[ADDR]:PORT`;
/// a bare IPv6 address takes the default port, as a bare host name does.
#[test]
fn the_registry_is_reached_over_ipv6() {
    let m = Memcached::start_ipv6();
    let spec = m.addr();
    assert!(spec.starts_with("[::1]:"), "{spec}");
    let r = Registry::connect(Some(&spec)).unwrap();
    r.publish("server-0", &info(6)).unwrap();
    assert_eq!(r.lookup("server-0").unwrap().unwrap().info, info(6));
    assert!(m.has("server-0"));
    let (addrs, shown) = rdma_bench::registry::registry_address(Some("::1")).unwrap();
    assert_eq!(shown, "[::1]:11211");
    assert!(addrs.iter().all(|a| a.is_ipv6()), "{addrs:?}");
    let e = Registry::connect(Some("[::1")).err().unwrap().to_string();
    assert!(e.contains("is not HOST[:PORT]"), "{e}");
}

#[test]
fn waits_for_a_key_published_a_second_later() {
    let m = Memcached::start();
    let addr = m.addr();
    let publisher = std::thread::spawn(move || {
        let r = Registry::connect(Some(&addr)).unwrap();
        std::thread::sleep(Duration::from_secs(1));
        r.publish("client-3", &info(9)).unwrap();
        r.publish_ready("client-3").unwrap();
        std::thread::sleep(Duration::from_secs(2)); // keep the keys until the reader saw them
    });
    let r = Registry::connect(Some(&m.addr())).unwrap();
    let t0 = Instant::now();
    let e = r.wait_for("client-3", quick(10_000)).unwrap();
    assert_eq!(
        r.wait_ready("client-3", quick(10_000), None).unwrap(),
        e.run_id
    );
    assert_eq!(e.info, info(9));
    assert!(
        t0.elapsed() >= Duration::from_millis(800),
        "{:?}",
        t0.elapsed()
    );
    publisher.join().unwrap();
}

#[test]
fn a_key_that_never_comes_times_out_with_a_clear_line() {
    let m = Memcached::start();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    let t0 = Instant::now();
    let e = r.wait_for("server-42", quick(1000)).unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(e.is_timeout(), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "server-42 did not appear at registry {} within 1 s",
            m.addr()
        )
    );
}

#[test]
fn registry_down_is_reported_at_once() {
    let port = memcached::free_port();
    let t0 = Instant::now();
    let err = Registry::connect(Some(&format!("127.0.0.1:{port}")))
        .err()
        .expect("nothing listens");
    assert!(t0.elapsed() < Duration::from_secs(3));
    // The kind survives up to the message: a registry failure with its I/O error as source.
    assert!(matches!(err, rdma_bench::Error::Registry { .. }), "{err:?}");
    assert!(std::error::Error::source(&err).is_some());
    let e = err.to_string();
    assert!(
        e.starts_with(&format!("registry at 127.0.0.1:{port}: cannot connect: ")),
        "{e}"
    );
    assert!(
        e.ends_with("(start memcached there, or set --registry / HRD_REGISTRY_IP)"),
        "{e}"
    );
}

#[test]
fn malformed_values_name_the_key() {
    let m = Memcached::start();
    raw_set(&m, "server-0", b"hrd_ready");
    raw_set(&m, "server-1", &[0xffu8; 72]);
    let r = Registry::connect(Some(&m.addr())).unwrap();
    let e = r.lookup("server-0").unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "registry entry 'server-0' at {} is malformed: value is 9 bytes",
            m.addr()
        )),
        "{e}"
    );
    let e = r.wait_for("server-1", quick(1000)).unwrap_err().to_string();
    assert!(e.contains("'server-1'") && e.contains("magic"), "{e}");
}

#[test]
fn stale_entries_are_ignored_when_asked() {
    let m = Memcached::start();
    let old = Registry::connect(Some(&m.addr())).unwrap();
    old.publish("server-0", &info(1)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let started = now_ms();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    let opts = WaitOptions {
        published_after_ms: Some(started),
        ..quick(600)
    };
    assert!(
        r.wait_for("server-0", opts).is_err(),
        "a previous run's entry must not be taken"
    );
    let fresh = Registry::connect(Some(&m.addr())).unwrap();
    fresh.publish("server-0", &info(2)).unwrap();
    assert_eq!(r.wait_for("server-0", opts).unwrap().info, info(2));
}

#[test]
fn ready_markers_of_other_runs_are_ignored() {
    let m = Memcached::start();
    let old = Registry::connect(Some(&m.addr())).unwrap();
    old.publish_ready("client-0").unwrap();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    assert!(r.is_ready("client-0", None).unwrap());
    assert!(!r.is_ready("client-0", Some(old.run_id() ^ 1)).unwrap());
    assert_eq!(
        r.wait_ready("client-0", quick(500), Some(old.run_id()))
            .unwrap(),
        old.run_id()
    );
    assert!(r
        .wait_ready("client-0", quick(500), Some(old.run_id() ^ 1))
        .is_err());
}

#[test]
fn dropping_the_registry_removes_its_keys() {
    let m = Memcached::start();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    r.publish("server-7", &info(7)).unwrap();
    r.publish_ready("server-7").unwrap();
    drop(r);
    let r = Registry::connect(Some(&m.addr())).unwrap();
    assert!(r.lookup("server-7").unwrap().is_none());
    assert!(r.wait_ready("server-7", quick(300), None).is_err());
}

#[test]
fn many_threads_publish_at_once() {
    let m = Memcached::start();
    let shared = Arc::new(Registry::connect(Some(&m.addr())).unwrap());
    let threads: Vec<_> = (0..16u32)
        .map(|t| {
            let addr = m.addr();
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                let own = Registry::connect(Some(&addr)).unwrap();
                for i in 0..25u32 {
                    own.publish(&format!("client-{t}-{i}"), &info(t * 100 + i))
                        .unwrap();
                    shared
                        .publish(&format!("server-{t}-{i}"), &info(t * 100 + i + 50))
                        .unwrap();
                }
                // Keep `own` (and its keys) alive until the main thread has checked.
                own
            })
        })
        .collect();
    let owners: Vec<std::sync::Arc<Registry>> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    for t in 0..16u32 {
        for i in 0..25u32 {
            assert_eq!(
                shared
                    .lookup(&format!("client-{t}-{i}"))
                    .unwrap()
                    .unwrap()
                    .info,
                info(t * 100 + i)
            );
            assert_eq!(
                shared
                    .lookup(&format!("server-{t}-{i}"))
                    .unwrap()
                    .unwrap()
                    .info,
                info(t * 100 + i + 50)
            );
        }
    }
    drop(owners);
}

#[test]
fn bad_names_and_addresses_are_refused() {
    let m = Memcached::start();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    let e = r.publish("has space", &info(1)).unwrap_err().to_string();
    assert_eq!(
        e,
        "'has space' is not a valid registry name (1-250 bytes, no spaces)"
    );
    let e = Registry::connect(Some("no such host!"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("is not HOST[:PORT]"), "{e}");
}

/// Child half of `a_killed_owners_entries_expire_and_a_live_owners_do_not`: publish, say so, wait to
/// be killed (its entries are never refreshed nor deleted).
#[test]
#[ignore = "child process of a_killed_owners_entries_expire_and_a_live_owners_do_not"]
fn expiring_child() {
    let addr = std::env::var("RDMA_BENCH_REGISTRY_CHILD").expect("run by the expiry test");
    let r = Registry::connect(Some(&addr)).unwrap();
    r.publish("victim", &info(9)).unwrap();
    r.publish_ready("victim").unwrap();
    println!("published");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_killed_owners_entries_expire_and_a_live_owners_do_not() {
    let _turn = watching();
    let m = Memcached::start();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "registry::expiring_child",
            "--ignored",
            "--nocapture",
        ])
        .env("RDMA_BENCH_REGISTRY_CHILD", m.addr())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // libtest prints its own lines first; the child's comes after them.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("published") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended early"
        );
    }
    child.kill().unwrap(); // SIGKILL: no cleanup, no refresh
    child.wait().unwrap();
    let me = Registry::connect(Some(&m.addr())).unwrap();
    me.publish("survivor", &info(1)).unwrap();
    assert!(me.lookup("victim").unwrap().is_some(), "not expired yet");
    let t0 = Instant::now();
    while me.lookup("victim").unwrap().is_some() {
        tend_fine(&m);
        assert!(
            t0.elapsed() < Duration::from_secs(u64::from(rdma_bench::registry::ENTRY_TTL_S) + 2),
            "a killed owner's entry outlived its TTL"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        !me.is_ready("victim", None).unwrap(),
        "its ready marker expired too"
    );
    // Our own entry, tended all along, outlived the TTL.
    std::thread::sleep(Duration::from_millis(1500));
    tend_fine(&m);
    assert!(me.lookup("survivor").unwrap().is_some());
}

/// The peer's entry is gone (here: deleted) and it left no done marker: after the grace a late
/// heartbeat gets, it is lost; one that said done is not.
#[test]
fn a_watched_peer_that_leaves_without_done_is_lost_and_one_that_says_done_is_not() {
    let _turn = watching();
    let m = Memcached::start();
    let me = Registry::connect(Some(&m.addr())).unwrap();
    let peer = Registry::connect(Some(&m.addr())).unwrap();
    peer.publish("server-0", &info(1)).unwrap();
    peer.publish("server-1", &info(2)).unwrap();
    let run = peer.run_id();
    let w0 = me.watch("server-0", run, "server-0");
    let _w1 = me.watch("server-1", run, "server-1");
    tend_fine(&m);
    peer.publish_done("server-1").unwrap();
    drop(peer); // deletes both entries; only server-1 said done
    let t0 = Instant::now();
    let e = loop {
        match tend(&m) {
            Tended::PeerGone(e) => break e,
            Tended::Fine => {}
            other => panic!("{other:?}"),
        }
        assert!(
            t0.elapsed() < GRACE + Duration::from_secs(5),
            "the lost peer went unnoticed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        t0.elapsed() >= GRACE,
        "lost before the grace: {:?}",
        t0.elapsed()
    );
    assert_eq!(e.exit_code(), 3, "{e}");
    assert!(
        e.to_string()
            .starts_with("peer server-0 is gone: its registry entry expired"),
        "{e}"
    );
    drop(w0);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(2500) {
        tend_fine(&m); // server-1 said done: not lost
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A peer whose heartbeat stops for a while (a starved process, a flapping link) is not lost
/// when its entry comes back within the grace; one that failed says why at once.
#[test]
fn a_late_heartbeat_is_forgiven_and_a_failure_marker_is_not() {
    let _turn = watching();
    let m = Memcached::start();
    let me = Registry::connect(Some(&m.addr())).unwrap();
    let peer = Registry::connect(Some(&m.addr())).unwrap();
    peer.publish("client-0", &info(1)).unwrap();
    let w = me.watch("client-0", peer.run_id(), "client-0");
    tend_fine(&m);
    // Gone for 5 s (longer than the checks' period), then back with the same run id.
    peer.unpublish_all();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        tend_fine(&m);
        std::thread::sleep(Duration::from_millis(100));
    }
    peer.publish("client-0", &info(1)).unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        tend_fine(&m);
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(w);
    // A failure marker (what a failing run leaves) ends the watch within one check.
    let w = me.watch("client-0", peer.run_id(), "client-0");
    raw_set(
        &m,
        &format!("failed-{:016x}", peer.run_id()),
        b"work completion error: transport retry counter exceeded",
    );
    let t0 = Instant::now();
    let e = loop {
        if let Tended::PeerGone(e) = tend(&m) {
            break e;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "the failure went unnoticed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        e.to_string(),
        "peer client-0 is gone: it failed: work completion error: transport retry counter exceeded"
    );
    drop(w);
}

/// The registry stops answering mid-run: `tend` says so once (the run goes on), and when it
/// answers again (restarted, empty) our entries are published again.
#[test]
fn a_registry_outage_is_survived_and_our_entries_come_back() {
    let _turn = watching();
    let mut m = Memcached::start();
    let me = Registry::connect(Some(&m.addr())).unwrap();
    me.publish("server-0", &info(7)).unwrap();
    let port = m.port;
    m.stop();
    let t0 = Instant::now();
    let mut firsts = 0;
    while t0.elapsed() < Duration::from_secs(6) {
        match tend(&m) {
            Tended::Unreachable { first, .. } => firsts += usize::from(first),
            Tended::Fine => {}
            other => panic!("{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(firsts, 1, "the outage is said once");
    let m = Memcached::start_on(port);
    let t0 = Instant::now();
    loop {
        if let Tended::Back(_) = tend(&m) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(8),
            "never answered again"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let other = Registry::connect(Some(&m.addr())).unwrap();
    let t0 = Instant::now();
    while other.lookup("server-0").unwrap().is_none() {
        tend_fine(&m);
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "our entry was not published again"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(other.lookup("server-0").unwrap().unwrap().info, info(7));
}

#[test]
fn run_names_keep_two_experiments_apart() {
    let m = Memcached::start();
    let a = Registry::connect_named(Some(&m.addr()), Some("exp-a")).unwrap();
    let b = Registry::connect_named(Some(&m.addr()), Some("exp-b")).unwrap();
    let plain = Registry::connect(Some(&m.addr())).unwrap();
    a.publish("server-0", &info(1)).unwrap();
    b.publish("server-0", &info(2)).unwrap();
    assert_eq!(a.lookup("server-0").unwrap().unwrap().info, info(1));
    assert_eq!(b.lookup("server-0").unwrap().unwrap().info, info(2));
    assert!(plain.lookup("server-0").unwrap().is_none());
    a.publish_ready("server-0").unwrap();
    assert!(!b.is_ready("server-0", None).unwrap());
    let e = Registry::connect_named(Some(&m.addr()), Some("has space"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("without spaces"), "{e}");
}

#[test]
fn a_silent_registry_is_a_timeout_not_an_os_error() {
    // Accepts connections, never answers.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let _hold = std::thread::spawn(move || {
        let conns: Vec<_> = l.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(30));
        drop(conns);
    });
    let t0 = Instant::now();
    let e = Registry::connect(Some(&addr.to_string())).err().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(8));
    assert!(e.is_timeout(), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "the registry at {addr} did not answer (answering its version request) within 5 s: \
             is it memcached, and is it alive?"
        )
    );
}

#[test]
fn a_stop_request_ends_a_wait_at_once() {
    let m = Memcached::start();
    let r = Registry::connect(Some(&m.addr())).unwrap();
    let stopped = rdma_bench::control::Attention::detached();
    stopped.request_stop();
    let t0 = Instant::now();
    let e = r
        .wait_for(
            "server-0",
            WaitOptions {
                stop: Some(stopped),
                ..quick(60_000)
            },
        )
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert_eq!(e.exit_code(), 130);
    assert_eq!(e.to_string(), "stopped while waiting for server-0");
}

#[test]
fn a_dead_entry_is_named_and_waited_past_and_a_live_one_is_taken() {
    let m = Memcached::start();
    let reader = Registry::connect(Some(&m.addr())).unwrap();
    // A "killed" owner: its entry is there, its heartbeat never moves (nobody refreshes it).
    raw_set(
        &m,
        "server-0",
        &rdma_bench::registry::encode(&rdma_bench::registry::Entry {
            info: info(5),
            run_id: 42,
            published_ms: now_ms(),
            beat: 0,
        }),
    );
    // A live owner replaces it after 4 s and is tended (heartbeat) from then on.
    let addr = m.addr();
    let owner = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(4));
        let live = Registry::connect(Some(&addr)).unwrap();
        live.publish("server-0", &info(6)).unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(6) {
            tend_fine(&m);
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let t0 = Instant::now();
    let e = reader.wait_live("server-0", quick(20_000)).unwrap();
    assert_eq!(e.info, info(6), "the dead entry was taken");
    assert!(t0.elapsed() < Duration::from_secs(9), "{:?}", t0.elapsed());
    owner.join().unwrap();
}
