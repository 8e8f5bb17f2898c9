//! Shared setup of the device tests: the device comes from the testbed's environment, and its
//! absence is a failure, never a skip.

#![allow(dead_code)]

// The helpers of the device and host test targets (tests/device/main.rs, tests/host/main.rs),
// each compiled once per target.
pub mod bench_run;
pub mod memcached;
pub mod perftest_pair;
pub mod stdout;
pub mod swarm;
pub mod threenode;
pub mod twonode;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdma_bench::mem::{HugeBuffer, Placement};
use rdma_bench::verbs::{
    Access, CompletionQueue, MemoryRegion, Port, ProtectionDomain, QpCaps, QpType, QueuePair,
};

/// A finished process's exit code (-1 if a signal ended it), stdout and stderr, as text.
pub fn output_of(o: std::process::Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Polls `cond` (every 100 ms) until it holds; fails after `bound`.
pub fn wait_for(bound: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + bound;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {bound:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The device port named by RDMA_BENCH_DEVICE / RDMA_BENCH_GID_INDEX (set by softroce.sh run).
pub fn port() -> Port {
    let dev = std::env::var("RDMA_BENCH_DEVICE").unwrap_or_else(|_| {
        panic!("RDMA_BENCH_DEVICE is not set: device tests run through bench_scripts/test.sh (Soft-RoCE testbed)")
    });
    let gid = std::env::var("RDMA_BENCH_GID_INDEX")
        .ok()
        .map(|g| g.parse().expect("RDMA_BENCH_GID_INDEX"));
    Port::open_by(Some(&dev), 0, gid).unwrap_or_else(|e| panic!("cannot open {dev}: {e}"))
}

/// One side of a connection: a QP with its own CQ, and a region that owns its buffer.
pub struct Side {
    pub qp: QueuePair,
    pub mr: Arc<MemoryRegion>,
}

impl Side {
    /// A copy of the whole region.
    pub fn bytes(&self) -> Vec<u8> {
        self.mr.to_vec(0, self.mr.len())
    }
    /// Copies `data` into the region at `off`.
    pub fn write(&self, off: usize, data: &[u8]) {
        self.mr.write(off, data)
    }
}

pub struct Env {
    pub port: Port,
    pub pd: Arc<ProtectionDomain>,
}

pub fn env() -> Env {
    let port = port();
    let pd = ProtectionDomain::new(port.context()).expect("ibv_alloc_pd");
    Env { port, pd }
}

pub fn all_access() -> Access {
    Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC
}

pub fn side(env: &Env, t: QpType, ex: bool, buf_len: usize) -> Side {
    let cq = CompletionQueue::new(env.port.context(), 256).expect("ibv_create_cq");
    let caps = QpCaps {
        max_send_wr: 256,
        max_recv_wr: 256,
        ..QpCaps::default()
    };
    let qp = if ex {
        QueuePair::new_ex(&env.pd, &env.port, &cq, &cq, t, caps)
    } else {
        QueuePair::new(&env.pd, &env.port, &cq, &cq, t, caps)
    }
    .expect("create QP");
    let buf = HugeBuffer::new(buf_len, Placement::default()).expect("buffer");
    let mr = MemoryRegion::register(&env.pd, buf, all_access()).expect("ibv_reg_mr");
    Side { qp, mr }
}

/// Two connected QPs of type `t` in this process.
pub fn pair(env: &Env, t: QpType, ex: bool) -> (Side, Side) {
    let mut a = side(env, t, ex, 1 << 16);
    let mut b = side(env, t, ex, 1 << 16);
    if t != QpType::Ud {
        a.qp.connect(&b.qp.info(Some(&b.mr))).expect("connect a→b");
        b.qp.connect(&a.qp.info(Some(&a.mr))).expect("connect b→a");
    }
    (a, b)
}
