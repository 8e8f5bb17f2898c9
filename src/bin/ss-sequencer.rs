//! ss-sequencer: see `rdma_bench::bench::SS_SEQUENCER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::SS_SEQUENCER);
}
