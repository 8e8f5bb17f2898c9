//! write-reordering: see `rdma_bench::bench::write_probes::reordering`.
use rdma_bench::bench::{runner, write_probes::reordering};

fn main() {
    runner::main::<reordering::Args>("write-reordering", reordering::run);
}
