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
        if settings.tool == super::Tool::SEND_BW {
            // iWARP has no RNR retry: a SEND that finds no RECV posted ends the connection.
            // perftest paces ib_send_bw there with a credit exchange (RDMA WRITEs of the
            // receive count), which this send-bw does not speak.
            return Err(Error::config(format!(
                "{name} is an iWARP device: a SEND there needs a RECV already posted (no RNR \
                 retry), and send-bw has no credit exchange to pace it: use send-lat, or \
                 write-bw"
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
