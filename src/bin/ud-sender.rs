//! ud-sender: see `rdma_bench::bench::ud_tput`.
use rdma_bench::bench::{ud_tput, runner};

fn main() {
    runner::main::<ud_tput::SenderArgs>("ud-sender", ud_tput::run_sender);
}
