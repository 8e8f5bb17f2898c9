//! sender-scalability: see `rdma_bench::bench::SENDER_SCALABILITY`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::SENDER_SCALABILITY);
}
