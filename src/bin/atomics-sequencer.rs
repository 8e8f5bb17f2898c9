//! atomics-sequencer: see `rdma_bench::bench::ATOMICS_SEQUENCER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::ATOMICS_SEQUENCER);
}
