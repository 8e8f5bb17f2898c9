//! What a device's provider allows a perftest tool, checked before any QP is made or peer
//! bothered: iWARP's rules (RDMA CM only, RC only), atomics, and the READ sink's access.

use super::args::PerfArgs;
use super::settings::Settings;
use super::Verb;
use crate::error::{Error, Result};
use crate::verbs::{Access, Context, QpType};

/// Refuses a tool the device cannot run, in one line naming the flag and the capability.
pub(super) fn check_device(ctx: &Context, settings: &Settings, a: &PerfArgs) -> Result<()> {
    let name = ctx.name();
    if ctx.is_iwarp() {
        if !a.rdma_cm {
            return Err(Error::config(format!(
                "{name} is an iWARP device: its QPs connect only through RDMA CM: add -R"
            )));
        }
        if settings.tool == super::Tool::SEND_BW && settings.duplex {
            // The credit exchange that paces SENDs there is one-way here: with -b each
            // side's credit WRITEs would share the send queue with its own SENDs.
            return Err(Error::config(format!(
                "-b: {name} is an iWARP device, where send-bw paces its SENDs with perftest's \
                 credit exchange, which rdma-bench runs one way only: run send-bw without -b"
            )));
        }
        match settings.qp_type {
            QpType::Rc => {}
            QpType::Uc => return Err(crate::verbs::iwarp::rc_only(name, "UC", "-c UC")),
            QpType::Ud => return Err(crate::verbs::iwarp::rc_only(name, "UD", "-c UD")),
        }
    }
    if settings.tool.verb == Verb::Atomic && !ctx.supports_atomics()? {
        return Err(Error::config(format!(
            "{name} has no RDMA atomics (atomic_cap is IBV_ATOMIC_NONE): {} cannot run on it",
            settings.tool.name()
        )));
    }
    Ok(())
}

/// The MR's access for `verb` on `ctx`: an iWARP READ's sink is written by the responder (a
/// tagged write of the READ response), so it needs `REMOTE_WRITE` too, as perftest sets.
pub(super) fn mr_access(ctx: &Context, verb: Verb) -> Access {
    Access::LOCAL_WRITE
        | match verb {
            Verb::Write => Access::REMOTE_WRITE,
            Verb::Read if ctx.is_iwarp() => Access::REMOTE_READ | Access::REMOTE_WRITE,
            Verb::Read => Access::REMOTE_READ,
            Verb::Atomic => Access::REMOTE_ATOMIC,
            Verb::Send => Access::LOCAL_WRITE,
        }
}
