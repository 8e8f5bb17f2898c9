//! rw-allsig: see `rdma_bench::bench::rw_allsig`.
use rdma_bench::bench::{runner, rw_allsig};

fn main() {
    runner::main::<rw_allsig::Args>("rw-allsig", rw_allsig::run);
}
