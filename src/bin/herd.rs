//! herd: see `rdma_bench::bench::herd`.
use rdma_bench::bench::{herd, runner};

fn main() {
    runner::main::<herd::HerdArgs>("herd", herd::run);
}
