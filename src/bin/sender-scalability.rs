//! sender-scalability: see `rdma_bench::bench::sender_scalability`.
use rdma_bench::bench::{runner, sender_scalability};

fn main() {
    runner::main::<sender_scalability::Args>("sender-scalability", sender_scalability::run);
}
