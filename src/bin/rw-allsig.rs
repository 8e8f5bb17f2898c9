//! rw-allsig: see `rdma_bench::bench::RW_ALLSIG`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::RW_ALLSIG);
}
