//! rw-tput-receiver: see `rdma_bench::bench::rw_tput`.
use rdma_bench::bench::{rw_tput, runner};

fn main() {
    runner::main::<rw_tput::ReceiverArgs>("rw-tput-receiver", rw_tput::run_receiver);
}
