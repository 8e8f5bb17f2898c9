//! rc-swarm: see `rdma_bench::bench::RC_SWARM`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::RC_SWARM);
}
