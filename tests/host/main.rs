//! Every host-only test in one test binary: what runs without an RDMA device (flag checks,
//! result files, plots, history, the registry over memcached, the store, the scripts). The
//! registry's tests mostly wait out their own timeouts: bench_scripts/test.sh runs them
//! (`registry::`) in a second process beside the others (`--skip registry::`).

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod herd_worker_instr;
mod history;
mod kv_bench;
mod registry;
mod sys_layer;
mod tools_compare;
mod tools_plot;
mod tools_sweep;
mod vs_original;
mod vs_original_store;
