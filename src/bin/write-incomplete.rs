//! write-incomplete: see `rdma_bench::bench::WRITE_INCOMPLETE`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::WRITE_INCOMPLETE);
}
