//! ss-sequencer: see `rdma_bench::bench::ss`.
use rdma_bench::bench::{runner, ss};

fn main() {
    runner::main::<ss::SequencerArgs>("ss-sequencer", ss::run_sequencer);
}
