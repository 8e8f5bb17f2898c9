//! write-lat: see `rdma_bench::bench::write_lat`.
use rdma_bench::bench::{runner, write_lat};

fn main() {
    runner::main::<write_lat::Args>("write-lat", write_lat::run);
}
