//! The sequencers and HERD across two machines: servers (and the masters and workers) on node
//! 0 with the registry, clients on node 1, each node its own Soft-RoCE device on a shared
//! virtual Ethernet. Runs on both guests of `softroce.sh run --nodes 2` (bench_scripts/test.sh
//! does); outside that testbed it fails, never skips.

use crate::common::bench_run;
use crate::common::twonode;

use bench_run::{check_counting, check_herd_store, check_passive, finish};
use twonode::{node, spawn, Registry};

/// Both nodes run this one test, in step: each benchmark's servers end when its clients have
/// finished, so node 0 moves on only after node 1 did.
#[test]
fn applications_across_two_nodes() {
    let _reg = Registry::start(11411);
    let server_side = node() == 0;

    let ss = env!("CARGO_BIN_EXE_ss-sequencer");
    let a = [
        "--num-server-threads",
        "2",
        "--max-num-clients",
        "2",
        "--postlist",
        "8",
        "--verify",
        "1",
        "--run-name",
        "ss",
    ];
    if server_side {
        let s = finish(spawn(ss, &a, "120"), "ss-sequencer servers on node 0");
        check_counting(&s, "Server", 2, "ss-sequencer", "SEND");
        assert!(s.contains("each received exactly once by 2 clients"), "{s}");
    } else {
        let mut c = a.to_vec();
        c.extend(["--is-client", "1", "--num-threads", "2"]);
        let c = finish(spawn(ss, &c, "3"), "ss-sequencer clients on node 1");
        check_counting(&c, "Client", 2, "ss-sequencer", "SEND");
        assert!(c.contains("main: Client 1: verify ok: "), "{c}");
    }

    let ws = env!("CARGO_BIN_EXE_ws-sequencer");
    let a = [
        "--num-workers",
        "2",
        "--num-clients",
        "2",
        "--postlist",
        "2",
        "--window",
        "8",
        "--verify",
        "1",
        "--run-name",
        "ws",
        "--shm-key",
        "9401",
    ];
    match request_rpc_run(ws, "ws-sequencer", &a) {
        Side::Workers(w) => assert!(w.contains("each received exactly once by 2 clients"), "{w}"),
        Side::Clients(c) => assert!(c.contains("main: Client 0: verify ok: "), "{c}"),
    }

    let herd = env!("CARGO_BIN_EXE_herd");
    let a = [
        "--num-workers",
        "2",
        "--num-clients",
        "2",
        "--postlist",
        "2",
        "--window",
        "16",
        "--num-keys",
        "65536",
        "--num-buckets",
        "16384",
        "--log-bytes",
        "8388608",
        "--update-percentage",
        "5",
        "--verify",
        "1",
        "--run-name",
        "herd",
        "--shm-key",
        "9402",
    ];
    match request_rpc_run(herd, "herd", &a) {
        Side::Workers(w) => {
            check_herd_store(&w, 0.99);
        }
        Side::Clients(c) => {
            for id in 0..2 {
                assert!(
                    c.contains(&format!("main: Client {id}: verify ok: ")),
                    "{c}"
                );
            }
        }
    }
}

/// What this node ran of a request-region run, checked as far as every such run is.
enum Side {
    Workers(String),
    Clients(String),
}

/// A request-region run (ws-*, HERD) of flags `a`: master and a worker process on node 0 (two
/// workers), a client process of two threads on node 1.
fn request_rpc_run(bin: &str, bench: &str, a: &[&str]) -> Side {
    if node() == 0 {
        let mut m = a.to_vec();
        m.extend(["--master", "1"]);
        let master = spawn(bin, &m, "120");
        let w = finish(spawn(bin, a, "120"), &format!("{bench} workers on node 0"));
        let ms = finish(master, &format!("{bench} master on node 0"));
        check_counting(&w, "Worker", 2, bench, "SEND");
        check_passive(&ms, bench);
        Side::Workers(w)
    } else {
        let mut c = a.to_vec();
        c.extend(["--is-client", "1", "--num-threads", "2"]);
        let c = finish(spawn(bin, &c, "3"), &format!("{bench} clients on node 1"));
        check_counting(&c, "Client", 2, bench, "WRITE");
        Side::Clients(c)
    }
}
