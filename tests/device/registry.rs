//! Two processes connect an RC QP pair purely through the memcached registry and WRITE to each
//! other — the way every benchmark of the suite starts.

use crate::common;
use crate::common::memcached;

use std::process::Command;
use std::time::Duration;

use common::{env, side};
use rdma_bench::hot::{poll_one, Op, PollTimeout, Remote, SendBatch, SendSpec};
use rdma_bench::registry::{now_ms, Registry, WaitOptions};
use rdma_bench::verbs::QpType;

const ROLE: &str = "RDMA_BENCH_REGISTRY_ROLE";

/// One process's part: publish, wait, connect, WRITE a tag into the peer, check the peer's tag.
fn peer(
    me: &str,
    other: &str,
    registry: &str,
    started_ms: u64,
    after: impl FnOnce(std::sync::Arc<Registry>),
) {
    let e = env();
    let mut s = side(&e, QpType::Rc, false, 4096);
    let reg = Registry::connect(Some(registry)).unwrap();
    let wait = WaitOptions {
        timeout: Duration::from_secs(60),
        published_after_ms: Some(started_ms),
        ..WaitOptions::default()
    };

    let info = s.qp.info(Some(&s.mr));
    let qp = &mut s.qp;
    let remote = reg
        .rendezvous(me, other, &info, wait, |r| qp.connect(r).map(drop))
        .unwrap()
        .info;

    let tag = format!("written by {me}");
    s.write(0, tag.as_bytes());
    let spec = SendSpec {
        op: Op::Write,
        postlist: 1,
        size: 64,
        stride: 64,
        local_offset: 0,
        remote_offset: 1024,
        inline: false,
    };
    let r = Remote {
        addr: remote.buf_addr,
        rkey: remote.rkey,
        len: remote.buf_size,
    };
    let mut batch = SendBatch::new(&mut s.qp, &s.mr, spec, Some(r)).unwrap();
    batch.set_signaled(0, true);
    batch.post(&mut s.qp).unwrap();
    poll_one(
        s.qp.send_cq(),
        PollTimeout::new(rdma_bench::control::Attention::detached()),
    )
    .unwrap();

    // The server announces its WRITE only after it saw the client's, and outlives the client
    // (the caller waits for the child's exit), so no marker is deleted before it is read.
    let is_server = me.starts_with("server");
    if !is_server {
        reg.publish_ready(&format!("{me}-wrote")).unwrap();
    }
    reg.wait_ready(&format!("{other}-wrote"), wait, None)
        .unwrap();
    if is_server {
        reg.publish_ready(&format!("{me}-wrote")).unwrap();
    }
    let expect = format!("written by {other}");
    assert_eq!(
        &s.bytes()[1024..1024 + expect.len()],
        expect.as_bytes(),
        "{me} did not receive {other}'s WRITE"
    );
    after(reg);
}

#[test]
#[ignore = "child process of two_processes_connect_through_the_registry"]
fn registry_client_process() {
    let registry = std::env::var(ROLE).expect("run by two_processes_connect_through_the_registry");
    let (registry, started) = registry.split_once(',').unwrap();
    peer(
        "client-0",
        "server-0",
        registry,
        started.parse().unwrap(),
        drop,
    );
}

#[test]
fn two_processes_connect_through_the_registry() {
    let m = memcached::Memcached::start();
    let started = now_ms();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "registry::registry_client_process",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, format!("{},{started}", m.addr()))
        .spawn()
        .unwrap();
    peer(
        "server-0",
        "client-0",
        &m.addr(),
        started,
        |_registry_kept_until_the_client_exits| {
            let status = child.wait().unwrap();
            assert!(status.success(), "client process failed: {status}");
        },
    );
}
