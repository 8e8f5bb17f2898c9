//! rdma-bench: the benchmarks of "Design Guidelines for High Performance RDMA Systems" (ATC'16) as a
//! raw-FFI crate.
//!
//! - [`verbs`]: RAII owners of verbs objects (context, PD, MR, CQ, QP, AH) and QP connection.
//! - [`mem`]: hugepage-backed buffers (anonymous and SysV shared), NUMA binding.
//! - [`hot`]: pre-built work-request batches, doorbell batching, selective signaling, polling.
//! - [`control`]: signal handling, the run's [`control::Attention`] (stop, failure, report
//!   tick) that loops are handed, and the recorded failure.
//! - [`registry`]: QP-info exchange (memcached like libhrd, or direct TCP).
//! - [`stats`]: counters, the C suite's report lines, JSON, latency summaries.
//! - [`counters`]: the fabric's counters around a measurement, classified, with a verdict.
//! - [`framework`]: what every benchmark is built on and a new one uses: the run lifecycle, the
//!   benchmark descriptor, the shared flags, connected pairs, the RPC building blocks.
//! - [`bench`](mod@bench): the paper's benchmarks, as descriptors ([`bench::ALL`]).
//! - [`build_info`]: which optional parts of rdma-core this build has (`ibv_wr_*`, RDMA CM, …).
//! - [`tools`]: the workflow around them (`rdma-bench doctor`).
//! - [`units`]: sizes and counts with K/M/G and Ki/Mi/Gi suffixes, as flags take them.
//! - [`error`]: the one error type, which keeps the failing verb, errno and a hint.

mod attention;
mod sys;

pub mod bench;
pub mod build_info;
pub mod control;
pub mod counters;
pub mod error;
pub mod framework;
pub mod hot;
pub mod kv;
pub mod mem;
pub mod perf;
pub mod registry;
pub mod stats;
pub mod tools;
pub mod units;
pub mod verbs;

pub use error::{Error, Result, WcStatus};
