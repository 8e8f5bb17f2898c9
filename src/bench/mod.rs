//! The paper's experiments, one module (or folder, for the multi-role ones) per directory of the
//! original: a clap `Args` struct, the checks, the [`Role`](crate::framework::Role)s a process
//! can play, and its [`Benchmark`] descriptor. What they share is the [`crate::framework`].

use crate::framework::Benchmark;

mod atomics_sequencer;
mod herd;
mod rc_swarm;
mod rw_allsig;
mod rw_postlist_latency;
mod rw_tput;
mod sender_scalability;
mod ss;
mod ud_tput;
mod write_probes;
mod ws;
mod ww_echo;

pub use atomics_sequencer::BENCH as ATOMICS_SEQUENCER;
pub use herd::BENCH as HERD;
pub use rc_swarm::BENCH as RC_SWARM;
pub use rw_allsig::BENCH as RW_ALLSIG;
pub use rw_postlist_latency::BENCH as RW_POSTLIST_LATENCY;
pub use rw_tput::{RECEIVER as RW_TPUT_RECEIVER, SENDER as RW_TPUT_SENDER};
pub use sender_scalability::BENCH as SENDER_SCALABILITY;
pub use ss::{ECHO as SS_ECHO, SEQUENCER as SS_SEQUENCER};
pub use ud_tput::{RECEIVER as UD_RECEIVER, SENDER as UD_SENDER};
pub use write_probes::REORDERING as WRITE_REORDERING;
pub use write_probes::{FLUSH as WRITE_FLUSH, INCOMPLETE as WRITE_INCOMPLETE};
pub use ws::{ECHO as WS_ECHO, SEQUENCER as WS_SEQUENCER};
pub use ww_echo::BENCH as WW_ECHO;

/// Every benchmark of the crate, in the suite's order.
pub static ALL: &[&Benchmark] = &[
    &RW_TPUT_SENDER,
    &RW_TPUT_RECEIVER,
    &UD_SENDER,
    &UD_RECEIVER,
    &RW_ALLSIG,
    &RW_POSTLIST_LATENCY,
    &SENDER_SCALABILITY,
    &ATOMICS_SEQUENCER,
    &SS_SEQUENCER,
    &WS_SEQUENCER,
    &SS_ECHO,
    &WS_ECHO,
    &WW_ECHO,
    &RC_SWARM,
    &HERD,
    &WRITE_REORDERING,
    &WRITE_INCOMPLETE,
    &WRITE_FLUSH,
];

/// The benchmark named `name`.
pub fn named(name: &str) -> Option<&'static Benchmark> {
    ALL.iter().copied().find(|b| b.name == name)
}
