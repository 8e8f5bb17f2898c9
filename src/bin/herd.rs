//! herd: see `rdma_bench::bench::HERD`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::HERD);
}
