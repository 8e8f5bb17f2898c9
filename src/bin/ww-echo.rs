//! ww-echo: see `rdma_bench::bench::WW_ECHO`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::WW_ECHO);
}
