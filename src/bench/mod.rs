//! One module per benchmark of the paper (same names as the original's directories), each a clap
//! `Args` struct and a `run(args)`; the pieces they share live in `common`, `endpoint` and `runner`.

pub mod atomics_sequencer;
pub mod common;
mod connected;
pub mod echo_payload;
pub mod endpoint;
pub mod herd;
pub mod region_ports;
pub mod request_rpc;
pub mod runner;
pub mod seq_verify;
pub mod ud_rpc;

pub mod rc_swarm;
pub mod rw_allsig;
pub mod rw_postlist_latency;
pub mod rw_tput;
pub mod sender_scalability;
pub mod ss;
pub mod ud_tput;
pub mod write_probes;
pub mod ws;
pub mod ww_echo;
