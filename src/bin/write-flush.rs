//! write-flush: see `rdma_bench::bench::WRITE_FLUSH`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::WRITE_FLUSH);
}
