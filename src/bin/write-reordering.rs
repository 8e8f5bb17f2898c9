//! write-reordering: see `rdma_bench::bench::WRITE_REORDERING`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::WRITE_REORDERING);
}
