//! Every test that needs a real RDMA device, in one test binary (one link, and one process whose
//! two test threads stay busy from the first test to the last). bench_scripts/test.sh runs it on
//! the Soft-RoCE testbed, or on the host's own device, with a libtest filter per boot:
//!
//! - one guest: every module but the four below (`--skip fabric:: --skip twonode::
//!   --skip ipv6only:: --skip multinode::`), with `failures::` in a second process beside the first (its tests
//!   mostly wait out registry timeouts);
//! - `fabric::`: one guest with two NUMA nodes and Soft-iWARP beside rxe0;
//! - `twonode::`: on both guests of a two-node testbed, one test at a time, in step;
//! - `ipv6only::`: on both guests of a two-node testbed with no IPv4 address (`--ipv6-only`);
//! - `multinode::`: on the three guests of a three-node testbed with sshd, in step.
//!
//! Outside those testbeds the tests fail, never skip. Tests of different modules run side by
//! side: none may count what another test makes (QPs, MRs, SysV segments) as its own.

#[path = "../common/mod.rs"]
mod common;

mod apps;
mod bench;
mod failures;
mod herd;
mod parity;
mod perf;
mod portability;
mod probes;
mod registry;
mod swarm;
mod tools;
mod verbs;

mod fabric;
mod ipv6only;
mod multinode;
mod twonode;
