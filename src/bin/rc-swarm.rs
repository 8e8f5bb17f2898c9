//! rc-swarm: see `rdma_bench::bench::rc_swarm`.
use rdma_bench::bench::{rc_swarm, runner};

fn main() {
    runner::main::<rc_swarm::Args>("rc-swarm", rc_swarm::run);
}
