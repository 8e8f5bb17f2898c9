//! ws-sequencer: see `rdma_bench::bench::ws`.
use rdma_bench::bench::{runner, ws};

fn main() {
    runner::main::<ws::SequencerArgs>("ws-sequencer", ws::run_sequencer);
}
