//! rw-tput-sender: see `rdma_bench::bench::rw_tput`.
use rdma_bench::bench::{runner, rw_tput};

fn main() {
    runner::main::<rw_tput::SenderArgs>("rw-tput-sender", rw_tput::run_sender);
}
