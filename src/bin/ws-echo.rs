//! ws-echo: see `rdma_bench::bench::ws`.
use rdma_bench::bench::{runner, ws};

fn main() {
    runner::main::<ws::EchoArgs>("ws-echo", ws::run_echo);
}
