//! ws-sequencer: see `rdma_bench::bench::WS_SEQUENCER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::WS_SEQUENCER);
}
