//! ud-receiver: see `rdma_bench::bench::ud_tput`.
use rdma_bench::bench::{runner, ud_tput};

fn main() {
    runner::main::<ud_tput::ReceiverArgs>("ud-receiver", ud_tput::run_receiver);
}
