//! ws-echo: see `rdma_bench::bench::WS_ECHO`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::WS_ECHO);
}
