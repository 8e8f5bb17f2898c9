//! The paper's sequencers and echo servers on a real device, every role, with `--verify 1`: exit
//! 0, a rate for every counting thread, the summary line, a valid JSON summary, and the
//! verification's own line. Then a Ctrl-C in the middle of a three-process run.

use crate::common::bench_run;
use crate::common::memcached;

use bench_run::{
    check_counting, check_passive, finish_all, interrupt_all, master_workers_clients,
    read_to_first_rates, shm_key_exists, spawn, wait_for_segment, with, SECS,
};
use memcached::Memcached;

/// Seconds a side that leaves on its clients' "done" may run at most.
const SERVER_SECS: &str = "90";

fn has(out: &str, line_start: &str) {
    assert!(
        out.lines().any(|l| l.starts_with(line_start)),
        "no line starting with {line_start:?}:\n{out}"
    );
}

#[test]
fn ss_sequencer_hands_out_every_value_once() {
    let bin = env!("CARGO_BIN_EXE_ss-sequencer");
    let m = Memcached::start();
    let a = [
        "--num-server-threads",
        "2",
        "--max-num-clients",
        "4",
        "--postlist",
        "8",
        "--verify",
        "1",
    ];
    let (c, s) = server_and_clients(bin, &m, &a, &["--num-threads", "2"]);
    check_counting(&c, "Client", 2, "ss-sequencer", "SEND");
    check_counting(&s, "Server", 2, "ss-sequencer", "SEND");
    has(&c, "main: Client 1: verify ok: ");
    has(&c, "main: Client 0: average latency = ");
    has(&s, "main: Server 0: average postlist = ");
    assert!(
        s.contains("values handed out, each received exactly once by 2 clients"),
        "{s}"
    );
}

#[test]
fn ss_echo_sends_every_payload_back() {
    let bin = env!("CARGO_BIN_EXE_ss-echo");
    let m = Memcached::start();
    let a = [
        "--num-server-threads",
        "1",
        "--max-num-clients",
        "2",
        "--postlist",
        "8",
        "--size",
        "24",
        "--verify",
        "1",
    ];
    let (c, s) = server_and_clients(bin, &m, &a, &["--num-threads", "2"]);
    check_counting(&c, "Client", 2, "ss-echo", "SEND");
    check_counting(&s, "Server", 1, "ss-echo", "SEND");
    has(&c, "main: Client 0: verify ok: ");
    has(&c, "main: Client 1: verify ok: ");
}

#[test]
fn atomics_sequencer_counts_every_fetch_and_add() {
    let bin = env!("CARGO_BIN_EXE_atomics-sequencer");
    // DrTM-KV's mix (the default), then the atomics-based sequencer: one counter.
    for (mode, key) in [
        (&["--buf-size", "1048576"][..], "9301"),
        (
            &[
                "--emulate-drtm",
                "0",
                "--use-random",
                "0",
                "--stride",
                "8",
                "--buf-size",
                "4096",
            ][..],
            "9302",
        ),
    ] {
        let m = Memcached::start();
        let mut a = vec![
            "--num-clients",
            "2",
            "--postlist",
            "8",
            "--verify",
            "1",
            "--shm-key",
            key,
        ];
        a.extend_from_slice(mode);
        let (c, s) = server_and_clients(bin, &m, &a, &["--num-threads", "2"]);
        let op = if mode[0] == "--emulate-drtm" {
            "FETCH_ADD"
        } else {
            "DRTM"
        };
        check_counting(&c, "Client", 2, "atomics-sequencer", op);
        check_passive(&s, "atomics-sequencer");
        has(&s, "main: verify ok: the counters add up to the ");
        has(&c, "main: Client 0: ");
        assert!(
            !shm_key_exists(key.parse().unwrap()),
            "the server's segment was left behind"
        );
    }
}

/// A server process (`a`) and a client process (`a` + `client_extra` + `--is-client 1`), both
/// checked for success; returns (client output, server output).
fn server_and_clients(
    bin: &str,
    m: &Memcached,
    a: &[&'static str],
    client_extra: &[&'static str],
) -> (String, String) {
    let server = spawn(bin, m, a, SERVER_SECS);
    let client_args = with(&with(a, client_extra), &["--is-client", "1"]);
    let client = spawn(bin, m, &client_args, SECS);
    let [c, s]: [String; 2] = finish_all(vec![(client, "client"), (server, "server")])
        .try_into()
        .unwrap();
    (c, s)
}

#[test]
fn ws_sequencer_master_workers_clients() {
    let bin = env!("CARGO_BIN_EXE_ws-sequencer");
    let m = Memcached::start();
    let a = [
        "--num-workers",
        "2",
        "--num-clients",
        "2",
        "--postlist",
        "2",
        "--window",
        "8",
        "--shm-key",
        "9303",
        "--verify",
        "1",
    ];
    let [c, w, ms]: [String; 3] =
        finish_all(master_workers_clients(bin, &m, &a, "2", SERVER_SECS, SECS))
            .try_into()
            .unwrap();
    check_counting(&c, "Client", 2, "ws-sequencer", "WRITE");
    check_counting(&w, "Worker", 2, "ws-sequencer", "SEND");
    check_passive(&ms, "ws-sequencer");
    has(&ms, "main: Master connected all 2 clients");
    has(&c, "main: Client 0: verify ok: ");
    assert!(w.contains("each received exactly once by 2 clients"), "{w}");
}

#[test]
fn ws_echo_master_workers_clients() {
    let bin = env!("CARGO_BIN_EXE_ws-echo");
    let m = Memcached::start();
    let a = [
        "--num-workers",
        "2",
        "--num-clients",
        "2",
        "--postlist",
        "2",
        "--window",
        "8",
        "--size",
        "24",
        "--shm-key",
        "9304",
        "--verify",
        "1",
    ];
    let [c, w, ms]: [String; 3] =
        finish_all(master_workers_clients(bin, &m, &a, "2", SERVER_SECS, SECS))
            .try_into()
            .unwrap();
    check_counting(&c, "Client", 2, "ws-echo", "WRITE");
    check_counting(&w, "Worker", 2, "ws-echo", "SEND");
    check_passive(&ms, "ws-echo");
    has(&c, "main: Client 1: verify ok: ");
}

#[test]
fn ww_echo_over_uc_and_rc() {
    let bin = env!("CARGO_BIN_EXE_ww-echo");
    for uc in ["1", "0"] {
        let m = Memcached::start();
        let a = [
            "--window", "16", "--size", "28", "--verify", "1", "--use-uc", uc,
        ];
        let (c, s) = server_and_clients(bin, &m, &a, &[]);
        check_counting(&c, "Client", 1, "ww-echo", "WRITE");
        check_counting(&s, "Server", 1, "ww-echo", "WRITE");
        has(&c, "main: Client 0: verify ok: ");
    }
}

/// One Ctrl-C for the whole run (as a terminal sends it to the process group): every process
/// prints what it measured and exits 0, and the master's request region is gone.
#[test]
fn sigint_mid_run_stops_all_three_and_removes_the_region() {
    let bin = env!("CARGO_BIN_EXE_ws-sequencer");
    let m = Memcached::start();
    let a = [
        "--num-workers",
        "1",
        "--num-clients",
        "1",
        "--postlist",
        "1",
        "--window",
        "8",
        "--shm-key",
        "9305",
        "--verify",
        "1",
    ];
    let mut run = master_workers_clients(bin, &m, &a, "1", "600", "600");
    wait_for_segment(9305);
    // Running: the client's and the worker's first rates, then interrupt everyone.
    let c_head = read_to_first_rates(&mut run[0].0, &["main: Client 0: "]);
    let w_head = read_to_first_rates(&mut run[1].0, &["main: Worker 0: "]);
    let [c, w, ms]: [String; 3] = interrupt_all(run).try_into().unwrap();
    let (c, w) = (c_head + &c, w_head + &w);
    check_counting(&c, "Client", 1, "ws-sequencer", "WRITE");
    check_counting(&w, "Worker", 1, "ws-sequencer", "SEND");
    check_passive(&ms, "ws-sequencer");
    has(&w, "main: verify skipped: stopped by a signal");
    assert!(
        !shm_key_exists(9305),
        "the request region (key 9305) was left behind"
    );
}
