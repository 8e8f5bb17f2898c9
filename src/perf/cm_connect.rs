//! `-R`: the session's RDMA CM side: the exchange channel over RDMA CM, the test QPs connected
//! through it, and their disconnection.

#[cfg(has_rdmacm)]
use std::time::Duration;

use super::args::PerfArgs;
use super::channel::Channel;
#[cfg(has_rdmacm)]
use super::channel::Wait;
#[cfg(has_rdmacm)]
use super::keys::Dest;
#[cfg(has_rdmacm)]
use super::report::WAITING_BANNER;
use super::session::Session;
#[cfg(has_rdmacm)]
use super::Verb;
use crate::error::{Error, Result};
use crate::verbs::Port;

/// `-R`: the exchange channel over RDMA CM, and the port its route uses.
#[cfg(has_rdmacm)]
pub(super) fn cm_channel(a: &PerfArgs) -> Result<(Channel, Port)> {
    use super::cm_link::CmLink;
    let (channel, port) = match &a.server {
        Some(host) => {
            let addr = super::channel::ipv4_of(host, a.port)?;
            let timeout = Duration::from_secs(a.connect_timeout);
            let (link, port) = CmLink::connect(addr, a.gid_index, timeout)?;
            (Channel::over_cm(link, true, addr.to_string()), port)
        }
        None => {
            println!("{WAITING_BANNER}");
            let (link, port) = CmLink::accept(a.port, a.gid_index)?;
            (
                Channel::over_cm(link, false, "the RDMA CM client".into()),
                port,
            )
        }
    };
    if let Some(d) = &a.ib_dev {
        if d != port.context().name() {
            return Err(Error::config(format!(
                "-d {d}, but RDMA CM reaches the peer through {} (with -R the address picks the device)",
                port.context().name()
            )));
        }
    }
    Ok((channel, port))
}

#[cfg(not(has_rdmacm))]
pub(super) fn cm_channel(_: &PerfArgs) -> Result<(Channel, Port)> {
    Err(Error::config(
        "-R needs librdmacm, and this rdma-bench was built without it (install librdmacm-dev or \
         rdma-core-devel and rebuild)",
    ))
}

impl Session {
    /// `-R`: connects every QP through RDMA CM between two empty handshakes, in perftest's
    /// order (the client's k-th connection is the server's k-th request). The server opens its
    /// listener before it answers the first handshake, so the client never finds it closed.
    #[cfg(has_rdmacm)]
    pub(super) fn connect_through_cm(&mut self, a: &PerfArgs) -> Result<()> {
        use crate::verbs::cm::{CmId, CmParams};
        let reads = matches!(self.settings.tool.verb, Verb::Read | Verb::Atomic);
        let depth = if reads { self.out_reads as u8 } else { 0 };
        let params = CmParams {
            responder_resources: depth,
            initiator_depth: depth,
            retry_count: 7,
            rnr_retry_count: 7,
        };
        let zero = Dest::default();
        let mut ids = Vec::with_capacity(self.qps.len());
        if let Some(host) = &a.server {
            self.channel.hand_shake(&zero, false, Wait::Setup)?;
            let addr = super::channel::ipv4_of(host, a.port)?;
            let start = std::time::Instant::now();
            for qp in &mut self.qps {
                loop {
                    let mut id = CmId::resolve(addr)?;
                    match id.connect(qp, params, super::channel::SETUP_TIMEOUT) {
                        Ok(()) => {
                            ids.push(id);
                            break;
                        }
                        // The listener may not be there yet (perftest opens it late).
                        Err(Error::Config(_))
                            if start.elapsed() < super::channel::SETUP_TIMEOUT =>
                        {
                            std::thread::sleep(Duration::from_millis(100));
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        } else {
            let mut listener = None;
            self.channel
                .hand_shake_then(&zero, false, Wait::Setup, || {
                    listener = Some(CmId::listen(a.port, self.qps.len() as i32)?);
                    Ok(())
                })?;
            let listener = listener.expect("set by the handshake");
            for qp in &mut self.qps {
                let mut id = listener.next_request(Some(super::channel::SETUP_TIMEOUT))?;
                id.accept(qp, params)?;
                ids.push(id);
            }
        }
        self.cm_ids = ids;
        self.channel.hand_shake(&zero, false, Wait::Setup)?;
        Ok(())
    }

    #[cfg(not(has_rdmacm))]
    pub(super) fn connect_through_cm(&mut self, a: &PerfArgs) -> Result<()> {
        cm_channel(a).map(|_| ())
    }
}

#[cfg(has_rdmacm)]
impl Drop for Session {
    /// `-R`: disconnects every test connection; a client waits (briefly) for each to be
    /// acknowledged, as perftest's client does, so that a perftest server sees it go.
    fn drop(&mut self) {
        for id in &mut self.cm_ids {
            id.disconnect();
        }
        if self.settings.is_client {
            for id in &self.cm_ids {
                id.wait_disconnected(Duration::from_secs(2));
            }
        }
    }
}
