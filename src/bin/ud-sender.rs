//! ud-sender: see `rdma_bench::bench::ud_tput`.
use rdma_bench::bench::{runner, ud_tput};

fn main() {
    runner::main::<ud_tput::SenderArgs>("ud-sender", ud_tput::run_sender);
}
