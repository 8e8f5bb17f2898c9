//! The user's workflow around the benchmarks, as subcommands of the `rdma-bench` binary:
//! `doctor` (is this host set up right?), `sweep` (a grid of runs with repetitions and
//! statistics), `plot` (charts of sweeps and suite results), `compare` (side-by-side tables of
//! ours, perftest's and the original C suite's results), `list` (every benchmark's descriptor),
//! `fleet` (every pair of a batch of hosts measured, bad pairs and suspect hosts found),
//! `history` (results over time: import, baselines, regression checks, Prometheus textfile),
//! `man` and `completions` (made from the same clap definitions as `--help`).
//! `results` reads what the benchmarks print.

pub mod child;
pub mod compare;
pub mod doctor;
pub mod fleet;
pub mod history;
pub mod list;
pub mod man;
pub mod plot;
pub mod results;
pub mod sweep;
