//! The binary's name; the master itself is [`crate::framework::request_rpc::Master`].

use super::Kind;

/// The binary's name.
pub(super) fn bench_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Sequencer => "ws-sequencer",
        Kind::Echo => "ws-echo",
    }
}
