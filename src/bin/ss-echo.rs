//! ss-echo: see `rdma_bench::bench::ss`.
use rdma_bench::bench::{runner, ss};

fn main() {
    runner::main::<ss::EchoArgs>("ss-echo", ss::run_echo);
}
