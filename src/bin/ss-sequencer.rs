//! ss-sequencer: see `rdma_bench::bench::ss_sequencer`.
use rdma_bench::bench::{runner, ss_sequencer};

fn main() {
    runner::main::<ss_sequencer::Args>("ss-sequencer", ss_sequencer::run);
}
