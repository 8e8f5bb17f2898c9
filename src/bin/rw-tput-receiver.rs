//! rw-tput-receiver: see `rdma_bench::bench::RW_TPUT_RECEIVER`.
fn main() {
    rdma_bench::framework::main(&rdma_bench::bench::RW_TPUT_RECEIVER);
}
