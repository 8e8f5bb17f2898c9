//! write-incomplete: see `rdma_bench::bench::write_probes::incomplete`.
use rdma_bench::bench::{runner, write_probes::incomplete};

fn main() {
    runner::main::<incomplete::Args>("write-incomplete", incomplete::run);
}
