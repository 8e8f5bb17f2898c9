//! ud-sender: see `rdma_bench::bench::UD_SENDER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::UD_SENDER);
}
