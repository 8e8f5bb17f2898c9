//! rw-tput-receiver: see `rdma_bench::bench::rw_tput`.
use rdma_bench::bench::{runner, rw_tput};

fn main() {
    runner::main::<rw_tput::ReceiverArgs>("rw-tput-receiver", rw_tput::run_receiver);
}
