//! What the three-node tests share: the node this is, every node's address, one ssh command, a
//! bounded wait.
//! They run on every node of `softroce.sh run --nodes 3 --sshd` (bench_scripts/test.sh);
//! outside that testbed they fail, never skip.

#![allow(dead_code)]

/// The testbed's size.
pub const NODES: usize = 3;

/// An environment variable the testbed sets.
pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: this test runs on every node of `softroce.sh run --nodes 3 --sshd` (bench_scripts/test.sh)")
    })
}

/// This node's number.
pub fn node() -> usize {
    env("SOFTROCE_NODE")
        .parse()
        .expect("SOFTROCE_NODE is a number")
}

/// Every node's address, in node order.
pub fn addresses() -> Vec<String> {
    let mut all: Vec<String> = env("SOFTROCE_PEERS")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    all.insert(node(), env("RDMA_BENCH_IP"));
    assert_eq!(all.len(), NODES, "this test needs --nodes {NODES}");
    all
}

/// ssh with one connection per host, kept open between commands: key exchange costs seconds on
/// an emulated CPU, and each test runs a dozen commands per host. Tools that take an ssh
/// command (fleet --ssh, run-all.sh's RC_SWARM_SSH) are given the same.
pub const SSH: &str = "ssh -o BatchMode=yes -o ConnectTimeout=10 -o ControlMaster=auto \
                       -o ControlPath=/tmp/threenode-ssh-%C -o ControlPersist=300";

/// `timeout SECONDS ssh HOST COMMAND` through the shared connection.
pub fn ssh(seconds: u32, host: &str, command: &str) -> std::process::Command {
    let mut c = std::process::Command::new("timeout");
    c.arg(seconds.to_string())
        .args(SSH.split_whitespace())
        .args([host, command]);
    c
}
