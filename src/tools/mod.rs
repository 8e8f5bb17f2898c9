//! The user's workflow around the benchmarks, as subcommands of the `rdma-bench` binary:
//! `doctor` (is this host set up right?).

pub mod doctor;
