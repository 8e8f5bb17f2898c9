//! ss-echo: see `rdma_bench::bench::SS_ECHO`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::SS_ECHO);
}
