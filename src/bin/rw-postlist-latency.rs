//! rw-postlist-latency: see `rdma_bench::bench::RW_POSTLIST_LATENCY`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::RW_POSTLIST_LATENCY);
}
