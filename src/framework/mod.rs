//! The framework every benchmark is built on, and that a new experiment uses from outside the
//! crate (see `examples/rw-mix.rs` and `docs/extending.md`).
//!
//! - **The lifecycle** ([`run`], [`Role`], [`Plan`], [`ThreadCtx`], [`Meter`]): a benchmark's
//!   entry parses and validates its flags and picks the role this process plays; [`run`] takes
//!   each thread through setup (open the port, make QPs and prebuilt WRs, meet the peers),
//!   a common start, the measured window and finish, and does the report, `--duration`,
//!   stability mode, liveness and the summary around them.
//! - **The descriptor** ([`Benchmark`], [`RoleSpec`], [`Family`], [`Output`], [`main`]): what a
//!   benchmark is, for the binaries (`main`), `rdma-bench list`, `run-local.sh`, the results
//!   reader and the tests.
//! - **Flags** ([`CommonArgs`], [`QueueArgs`], [`Topology`] and the checks [`require`],
//!   [`check_inline`]).
//! - **Connections**: [`Endpoint`] (PD, CQ, QP and a registered buffer), connected pairs
//!   ([`PairSpec`], [`Pair`], the passive [`Target`]), the connection check ([`hello`]).
//! - **Building blocks of the paper's RPC applications**: UD request/reply QPs ([`ud_rpc`]),
//!   request regions written by clients and polled by workers ([`request_rpc`]), one region
//!   shared by many connections over several ports ([`region`]), echo payload tags
//!   ([`echo_payload`]) and the sequencers' verification ([`seq_verify`]).

mod args;
mod clock;
mod descriptor;
mod endpoint;
mod fabric;
mod lifecycle;
mod meter;
mod pair;
mod roll_call;

pub mod echo_payload;
pub mod region;
pub mod request_rpc;
pub mod seq_verify;
pub mod ud_rpc;

pub use crate::hot::slot_stride;
pub use args::{
    check_inline, check_ud_size, counts_at_least_one, fill_byte, flag01, parse_reap,
    port_index_for, positive_secs, require, CommonArgs, QueueArgs, Topology, REAP_HELP,
};
pub use descriptor::{main, Benchmark, Family, Output, RoleSpec};
pub use endpoint::{
    connect_qp, hello, hello_all, idle_until_peers_done, publish_done, Endpoint, EndpointSpec,
    Hello, HELLO_TIMEOUT,
};
pub use lifecycle::{run, Plan, Role, ThreadCtx};
pub use meter::{Lull, Meter};
pub use pair::{announce_done, peer_lost, Pair, PairSpec, Target, CLIENT_POSTS, SERVER_POSTS};
pub use roll_call::RollCall;
