//! atomics-sequencer: see `rdma_bench::bench::atomics_sequencer`.
use rdma_bench::bench::{atomics_sequencer, runner};

fn main() {
    runner::main::<atomics_sequencer::Args>("atomics-sequencer", atomics_sequencer::run);
}
