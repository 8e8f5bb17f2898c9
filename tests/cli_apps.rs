//! The sequencer and echo benchmarks refuse impossible flag combinations before any resource is
//! made: one line naming the rule, exit code 1. Host-only (the checks run before a device opens).

use std::process::Command;

fn refuse(bin: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin).args(args).output().expect("binary runs");
    assert!(
        out.stdout.is_empty(),
        "refused runs print nothing on stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SS_SEQ: &str = env!("CARGO_BIN_EXE_ss-sequencer");
const WS_SEQ: &str = env!("CARGO_BIN_EXE_ws-sequencer");

#[test]
fn postlist_above_unsig_batch() {
    assert_eq!(
        refuse(SS_SEQ, &["--postlist", "32", "--unsig-batch", "16"]),
        (
            1,
            "ss-sequencer: postlist (32) must not exceed unsig_batch (16)\n".into()
        )
    );
    assert_eq!(
        refuse(
            WS_SEQ,
            &[
                "--postlist",
                "64",
                "--unsig-batch",
                "32",
                "--num-clients",
                "70"
            ]
        ),
        (
            1,
            "ws-sequencer: postlist (64) must not exceed unsig_batch (32)\n".into()
        )
    );
}

#[test]
fn recv_queue_smaller_than_clients_times_postlist() {
    assert_eq!(
        refuse(SS_SEQ, &["--postlist", "32", "--num-server-threads", "10"]),
        (
            1,
            "ss-sequencer: the servers' RECV queue (rq-depth 128) is smaller than clients per server \
thread (7 = ceil(max-num-clients 70 / num-server-threads 10)) × postlist 32\n"
                .into()
        )
    );
}

#[test]
fn window_above_queue_depth() {
    assert_eq!(
        refuse(WS_SEQ, &["--window", "200", "--queue-depth", "128", "--is-client", "1"]),
        (
            1,
            "ws-sequencer: window (200) exceeds the queue depth (128): a client's RECV queue holds \
one reply per outstanding request\n"
                .into()
        )
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_ww-echo"), &["--window", "100", "--queue-depth", "64", "--unsig-batch", "32"]),
        (
            1,
            "ww-echo: window (100) exceeds the queue depth (64): a round posts the whole window at once\n"
                .into()
        )
    );
}

#[test]
fn role_and_size_rules() {
    assert_eq!(
        refuse(SS_SEQ, &["--num-threads", "2"]),
        (1, "ss-sequencer: the server runs --num-server-threads threads; --num-threads is for clients\n".into())
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_ws-echo"), &["--size", "20"]),
        (1, "ws-echo: size 20 must be a multiple of 8 between 8 and 56 (a request and its tag fill one 64-byte slot)\n".into())
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_ss-echo"), &["--size", "100"]),
        (1, "ss-echo: size 100 is above the inline limit of 60 bytes for inlined SENDs (see --max-inline)\n".into())
    );
    assert_eq!(
        refuse(
            env!("CARGO_BIN_EXE_atomics-sequencer"),
            &["--emulate-drtm", "1", "--use-random", "0"]
        ),
        (
            1,
            "atomics-sequencer: DrTM emulation needs --use-random 1 (one slot per key)\n".into()
        )
    );
    assert_eq!(
        refuse(env!("CARGO_BIN_EXE_atomics-sequencer"), &["--is-client", "1", "--num-threads", "4", "--num-clients", "2"]),
        (1, "atomics-sequencer: client 3 (machine-id 0 × num-threads 4 + t) is beyond num-clients 2\n".into())
    );
}

#[test]
fn help_names_the_originals_constants() {
    let out = Command::new(WS_SEQ).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--master",
        "--window",
        "--num-workers",
        "--num-ud-qps",
        "--shm-key",
        "--rr-size",
    ] {
        assert!(
            help.contains(flag),
            "ws-sequencer --help lacks {flag}:\n{help}"
        );
    }
    assert!(
        help.contains("[default: 32]") && help.contains("[default: 70]"),
        "{help}"
    );
}
