//! rw-postlist-latency: see `rdma_bench::bench::rw_postlist_latency`.
use rdma_bench::bench::{runner, rw_postlist_latency};

fn main() {
    runner::main::<rw_postlist_latency::Args>("rw-postlist-latency", rw_postlist_latency::run);
}
