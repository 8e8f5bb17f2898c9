//! ww-echo: see `rdma_bench::bench::ww_echo`.
use rdma_bench::bench::{runner, ww_echo};

fn main() {
    runner::main::<ww_echo::Args>("ww-echo", ww_echo::run);
}
