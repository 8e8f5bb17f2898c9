//! NUMA placement on a two-node guest (`softroce.sh run --numa`, as bench_scripts/test.sh boots
//! the device tests) whose hugepages all sit on node 1, as a two-socket host whose NIC-side
//! socket has none left: `--numa-node 0` with `--hugepages require` is refused by name, with the
//! node's free hugepages, before anything is made; with `auto` the run goes on ordinary pages on
//! node 0 after one warning; `--numa-node 1` gets its hugepages. Never SIGBUS, never EFAULT from
//! ibv_reg_mr. Its own binary: it moves the guest's hugepages, which no other test may see
//! meanwhile.

use crate::common::bench_run;
use crate::common::memcached;

use bench_run::{check_counting, check_passive, finish, spawn};
use memcached::Memcached;

const RW: &str = env!("CARGO_BIN_EXE_rw-tput-sender");

fn nr_hugepages(node: u32) -> String {
    format!("/sys/devices/system/node/node{node}/hugepages/hugepages-2048kB/nr_hugepages")
}

/// The guest's hugepages moved to node 1 while it lives; put back after.
struct AllOnNode1 {
    was: [String; 2],
}

impl AllOnNode1 {
    fn set() -> AllOnNode1 {
        let read = |n| {
            std::fs::read_to_string(nr_hugepages(n))
                .unwrap()
                .trim()
                .to_string()
        };
        let was = [read(0), read(1)];
        std::fs::write(nr_hugepages(0), "0").unwrap();
        std::fs::write(nr_hugepages(1), "64").unwrap();
        assert_eq!(rdma_bench::mem::node_free_hugepages(0), Some(0));
        assert!(rdma_bench::mem::node_free_hugepages(1).unwrap() >= 32);
        AllOnNode1 { was }
    }
}

impl Drop for AllOnNode1 {
    fn drop(&mut self) {
        let _ = std::fs::write(nr_hugepages(1), &self.was[1]);
        let _ = std::fs::write(nr_hugepages(0), &self.was[0]);
    }
}

#[test]
fn numa_placement_follows_the_hugepage_policy() {
    assert_eq!(
        rdma_bench::mem::numa_nodes(),
        Some(vec![0, 1]),
        "the device tests' guest has two NUMA nodes (softroce.sh run --numa)"
    );
    let _hugepages = AllOnNode1::set();
    // 16 MiB buffers on both sides: 8 hugepages each.
    let size = ["--buf-size", "16777216"];

    // require: one line naming the node and what it has, before any QP or segment.
    let m = Memcached::start();
    let args = [&size[..], &["--numa-node", "0", "--hugepages", "require"]].concat();
    let out = spawn(RW, &m, &args, "1").wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("NUMA node 0 has 0 free 2 MiB hugepages and the buffer needs 8"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("EFAULT"),
        "{err}"
    );

    // auto: one warning, ordinary pages on node 0, a normal run.
    let server_args = [&size[..], &["--numa-node", "0", "--hugepages", "auto"]].concat();
    let server = spawn(RW, &m, &server_args, "2");
    let client_args = [&server_args[..], &["--is-client", "1"]].concat();
    let client = spawn(RW, &m, &client_args, "2");
    let c = client.wait_with_output().unwrap();
    let s = finish(server, "server on node 0, hugepages auto");
    let c_err = String::from_utf8_lossy(&c.stderr);
    assert!(c.status.success(), "{c_err}");
    check_counting(&s, "Server", 1, "rw-tput-sender", "WRITE");
    check_passive(&String::from_utf8_lossy(&c.stdout), "rw-tput-sender");
    assert!(
        c_err.contains("warning: no hugepages for ")
            && c_err.contains("NUMA node 0 has 0 free 2 MiB hugepages"),
        "{c_err}"
    );

    // Node 1 has them: require is met there.
    let on1 = [&size[..], &["--numa-node", "1", "--hugepages", "require"]].concat();
    let server = spawn(RW, &m, &on1, "2");
    let client = spawn(RW, &m, &[&on1[..], &["--is-client", "1"]].concat(), "2");
    let c = finish(client, "client on node 1");
    let s = finish(server, "server on node 1");
    check_counting(&s, "Server", 1, "rw-tput-sender", "WRITE");
    check_passive(&c, "rw-tput-sender");
}
