//! write-flush: see `rdma_bench::bench::write_probes::flush`.
use rdma_bench::bench::{runner, write_probes::flush};

fn main() {
    runner::main::<flush::Args>("write-flush", flush::run);
}
