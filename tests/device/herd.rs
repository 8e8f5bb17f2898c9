//! HERD on a real device: master, workers and clients with `--verify 1` and 5 % PUTs (exit 0,
//! rates for every client and worker, hit rate after population, JSON), then a Ctrl-C in the
//! middle of a run: summaries printed, request region gone, no SysV segment left.

use crate::common::bench_run;
use crate::common::memcached;

use bench_run::{
    check_counting, check_herd_store, check_passive, finish_all, interrupt_all,
    master_workers_clients, read_to_first_rates, segments_made_by, shm_key_exists,
    wait_for_segment, SECS,
};
use memcached::Memcached;

/// A store that fits the testbed: 64 Ki keys over 2 workers, a quarter of the index slots used,
/// a log with room for every item.
const SMALL: [&str; 8] = [
    "--num-keys",
    "65536",
    "--num-buckets",
    "16384",
    "--log-bytes",
    "8388608",
    "--hugepages",
    "auto",
];

fn args(shm_key: &'static str, more: &[&'static str]) -> Vec<&'static str> {
    let mut a = vec![
        "--num-workers",
        "2",
        "--num-clients",
        "2",
        "--postlist",
        "2",
        "--window",
        "16",
        "--shm-key",
        shm_key,
    ];
    a.extend(SMALL);
    a.extend(more);
    a
}

#[test]
fn herd_master_workers_clients_with_puts_verified() {
    let bin = env!("CARGO_BIN_EXE_herd");
    let m = Memcached::start();
    // Two reply QPs per worker: replies may overtake each other, and the clients must still
    // match every reply to its request.
    let a = args(
        "9501",
        &[
            "--update-percentage",
            "5",
            "--verify",
            "1",
            "--num-ud-qps",
            "2",
        ],
    );
    let [c, w, ms]: [String; 3] = finish_all(master_workers_clients(bin, &m, &a, "2", "90", SECS))
        .try_into()
        .unwrap();
    check_counting(&c, "Client", 2, "herd", "WRITE");
    check_counting(&w, "Worker", 2, "herd", "SEND");
    check_passive(&ms, "herd");
    check_herd_store(&w, 0.99);
    for id in 0..2 {
        let verified = format!("main: Client {id}: verify ok: ");
        let line = c
            .lines()
            .find(|l| l.starts_with(&verified))
            .unwrap_or_else(|| panic!("no verify line for client {id}:\n{c}"));
        let checked: u64 = line[verified.len()..]
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(checked > 0, "client {id} checked no GET of its keys:\n{c}");
    }
    assert!(!shm_key_exists(9501), "the request region was left behind");
}

/// One Ctrl-C for the whole run: every process prints what it measured and exits 0; the
/// request region is gone and no segment of ours (the stores are private mappings) is left.
/// Segments are told apart by their creator's pid: the other HERD test runs alongside this one.
#[test]
fn herd_sigint_mid_run_prints_summaries_and_leaves_no_segment() {
    let bin = env!("CARGO_BIN_EXE_herd");
    let m = Memcached::start();
    let a = args("9502", &["--update-percentage", "50"]);
    let mut run = master_workers_clients(bin, &m, &a, "2", "600", "600");
    let pids: Vec<u32> = run.iter().map(|(p, _)| p.id()).collect();
    wait_for_segment(9502);
    // Running: every client's and worker's first rates, then interrupt everyone.
    let c_head = read_to_first_rates(&mut run[0].0, &["main: Client 0: ", "main: Client 1: "]);
    let w_head = read_to_first_rates(&mut run[1].0, &["main: Worker 0: ", "main: Worker 1: "]);
    let [c, w, ms]: [String; 3] = interrupt_all(run).try_into().unwrap();
    let (c, w) = (c_head + &c, w_head + &w);
    check_counting(&c, "Client", 2, "herd", "WRITE");
    check_counting(&w, "Worker", 2, "herd", "SEND");
    check_passive(&ms, "herd");
    check_herd_store(&w, 0.99);
    assert!(!shm_key_exists(9502), "the request region was left behind");
    let ours = segments_made_by(&pids);
    assert!(
        ours.is_empty(),
        "segments made by this run are left: {ours:?}"
    );
}
