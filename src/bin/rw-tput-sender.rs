//! rw-tput-sender: see `rdma_bench::bench::RW_TPUT_SENDER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::RW_TPUT_SENDER);
}
