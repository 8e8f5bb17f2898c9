//! ud-receiver: see `rdma_bench::bench::UD_RECEIVER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::UD_RECEIVER);
}
