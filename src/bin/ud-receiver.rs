//! ud-receiver: see `rdma_bench::bench::ud_tput`.
use rdma_bench::bench::{ud_tput, runner};

fn main() {
    runner::main::<ud_tput::ReceiverArgs>("ud-receiver", ud_tput::run_receiver);
}
