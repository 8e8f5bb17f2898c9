//! `-R` and `-z`: the session's RDMA CM side: the exchange channel over RDMA CM (both), the test
//! QPs connected through it and their disconnection (`-R`).

#[cfg(has_rdmacm)]
use std::sync::Arc;
#[cfg(has_rdmacm)]
use std::time::Duration;

use super::args::PerfArgs;
use super::channel::Channel;
#[cfg(has_rdmacm)]
use super::channel::Wait;
#[cfg(has_rdmacm)]
use super::family::Family;
#[cfg(has_rdmacm)]
use super::keys::Dest;
#[cfg(has_rdmacm)]
use super::report::WAITING_BANNER;
use super::session::Session;
use super::settings::Settings;
#[cfg(has_rdmacm)]
use super::Verb;
use crate::control::Attention;
use crate::error::{Error, Result};
use crate::verbs::Port;

/// `-R`: the exchange channel over RDMA CM, and the port its route uses; with `tos` (`-T`) in
/// the test QPs' traffic class (perftest leaves its exchange in the default class; ours goes
/// where the test goes, so that a fabric's class rules see one kind of rdma-bench traffic).
#[cfg(has_rdmacm)]
pub(super) fn cm_channel(
    a: &PerfArgs,
    settings: &Settings,
    attention: Attention,
) -> Result<(Channel, Port)> {
    use super::cm_link::CmLink;
    let (source, family, tos) = (settings.source_ip, settings.family, settings.qos.tos);
    let (channel, port) = match &a.server {
        Some(host) => {
            // Without the device RDMA CM would fail in its event channel and blame rdma_ucm.
            let devices = crate::verbs::devices()?;
            if devices.is_empty() {
                return Err(no_device());
            }
            if let Some(d) = a
                .ib_dev
                .as_deref()
                .filter(|d| !devices.iter().any(|n| n == d))
            {
                return Err(crate::verbs::unknown_device(d, &devices));
            }
            let addr = family.resolve(host, a.port)?;
            let timeout = Duration::from_secs(a.connect_timeout);
            let (link, port) = CmLink::connect(source, addr, a.gid_index, tos, timeout, attention)?;
            (Channel::over_cm(link, true, addr.to_string()), port)
        }
        None => {
            // RDMA CM listens on one family: a device without an address of it could wait for
            // ever, so that is refused before the banner.
            let mut reachable = ports_with_addresses(a.ib_dev.as_deref(), family)?;
            if let Some(ip) = source {
                reachable.retain(|(_, at)| *at == ip);
                if reachable.is_empty() {
                    return Err(Error::config(format!(
                        "--source_ip {ip}: no ACTIVE RDMA port has this address (-R listens on \
                         the RDMA interface's address)"
                    )));
                }
            }
            let at: Vec<String> = reachable
                .iter()
                .map(|(port, ip)| format!("{ip} ({port})"))
                .collect();
            eprintln!("RDMA CM listens on port {}: {}", a.port, at.join(", "));
            if a.output.is_none() {
                println!("{WAITING_BANNER}");
            }
            let at = source.unwrap_or(family.unspecified());
            let (link, port) = CmLink::accept(at, a.port, a.gid_index, attention)?;
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

/// `-R` on a host whose libibverbs lists no device.
#[cfg(has_rdmacm)]
fn no_device() -> Error {
    Error::config("-R: there is no RDMA device on this host (ibv_devices lists none)")
}

/// The ACTIVE ports (of `device`, or of every device) with an address of `family` (RoCE/IB:
/// an IPv4-mapped GID, or an IPv6 one that is not link-local; iWARP: its netdev's), with that
/// address: where an RDMA CM client can reach this side. Refused when there is none.
#[cfg(has_rdmacm)]
fn ports_with_addresses(
    device: Option<&str>,
    family: Family,
) -> Result<Vec<(String, std::net::IpAddr)>> {
    use crate::verbs::{Context, PortState};
    let names = match device {
        Some(d) => vec![d.to_string()],
        None => crate::verbs::devices()?,
    };
    if names.is_empty() {
        return Err(no_device());
    }
    let mut found = Vec::new();
    for name in &names {
        // A device that does not open is not where a client lands; -d's own failure is said.
        let ctx = match Context::open(name) {
            Ok(c) => c,
            Err(e) if device.is_some() => return Err(e),
            Err(_) => continue,
        };
        for num in 1..=ctx.port_count()? {
            let attr = ctx.query_port(num)?;
            if attr.state != PortState::Active {
                continue;
            }
            // An iWARP GID is a MAC address: its port is reached at its netdev's addresses.
            let ips: Vec<std::net::IpAddr> = if ctx.is_iwarp() {
                ctx.iwarp_addrs(num)
            } else {
                // A RoCE GID is an address; an InfiniBand GID is one only when IPv4-mapped (an
                // IPoIB address is not in the table, and a global IB GID names no IPv6 host).
                let roce = attr.link_layer == crate::verbs::LinkLayer::Ethernet;
                (0..attr.gid_tbl_len)
                    .filter_map(|i| ctx.gid(num, i).ok().and_then(|g| g.ip_address()))
                    .filter(|ip| roce || ip.is_ipv4())
                    .find(|ip| family.holds(ip))
                    .into_iter()
                    .collect()
            };
            for ip in ips.into_iter().filter(|ip| family.holds(ip)) {
                found.push((format!("{name}:{num}"), ip));
            }
        }
    }
    if found.is_empty() {
        return Err(Error::config(format!(
            "-R: no ACTIVE port of {} has an {family} address (no {gid} GID, or an iWARP netdev \
             without one), and RDMA CM listens on {family} here: give its netdev an address (ip \
             addr add …), {switch}, or run without -R",
            names.join(", "),
            family = family.name(),
            gid = match family {
                Family::V4 => "IPv4-mapped",
                Family::V6 => "global IPv6",
            },
            switch = match family {
                Family::V4 => "give both sides --ipv6-addr",
                Family::V6 => "drop --ipv6-addr on both sides",
            }
        )));
    }
    Ok(found)
}

#[cfg(not(has_rdmacm))]
pub(super) fn cm_channel(_: &PerfArgs, _: &Settings, _: Attention) -> Result<(Channel, Port)> {
    Err(Error::config(
        "-R and -z need librdmacm, and this rdma-bench was built without it (install \
         librdmacm-dev or rdma-core-devel and rebuild)",
    ))
}

impl Session {
    /// `-R`: connects every QP through RDMA CM between two empty handshakes, in perftest's
    /// order (the client's k-th connection is the server's k-th request). The server opens its
    /// listener before it answers the first handshake, so the client never finds it closed.
    #[cfg(has_rdmacm)]
    pub(super) fn connect_through_cm(&mut self, a: &PerfArgs) -> Result<()> {
        use crate::verbs::cm::{CmId, CmParams};
        if self.settings.qp_type == crate::verbs::QpType::Ud {
            return self.find_ud_peers_through_cm(a);
        }
        let (source, family) = (self.settings.source_ip, self.settings.family);
        let reads = matches!(self.settings.tool.verb, Verb::Read | Verb::Atomic);
        let depth = if reads { self.out_reads as u8 } else { 0 };
        let params = CmParams {
            responder_resources: depth,
            initiator_depth: depth,
            retry_count: self.settings.qos.retry_count,
            rnr_retry_count: 7,
        };
        let zero = Dest::default();
        let mut ids = Vec::with_capacity(self.qps.len());
        if let Some(host) = &a.server {
            self.channel.hand_shake(&zero, false, Wait::Setup)?;
            let addr = family.resolve(host, a.port)?;
            let start = std::time::Instant::now();
            for qp in &mut self.qps {
                let id = retry_rejected(start, || {
                    let mut id =
                        CmId::resolve_from(source, addr, self.settings.qos.tos, self.attention)?;
                    id.set_ack_timeout(self.qp_timeout)?;
                    id.connect(qp, params, super::channel::SETUP_TIMEOUT)?;
                    Ok(id)
                })?;
                ids.push(id);
            }
        } else {
            let backlog = self.qps.len() as i32;
            let attention = self.attention;
            let at = source.unwrap_or(family.unspecified());
            let listener =
                self.listen_in_handshake(|| CmId::listen_on(at, a.port, backlog, attention))?;
            for qp in &mut self.qps {
                let mut id = listener.next_request(Some(super::channel::SETUP_TIMEOUT))?;
                id.accept(qp, params, super::channel::SETUP_TIMEOUT)?;
                ids.push(id);
            }
        }
        self.cm_ids = ids;
        self.channel.hand_shake(&zero, false, Wait::Setup)?;
        Ok(())
    }

    /// `-R -c UD`, as perftest: per QP the client asks the server's UDP-space listener for its
    /// QP (SIDR) and learns its number, Q_Key and path; both QPs take that Q_Key. When the
    /// server sends too (latency tests, `-b`) it learns the client's QP from a SEND with
    /// immediate (the client's QP number) that it receives before anything else, and answers
    /// along that datagram's path.
    #[cfg(has_rdmacm)]
    fn find_ud_peers_through_cm(&mut self, a: &PerfArgs) -> Result<()> {
        use crate::verbs::cm::CmId;
        use crate::verbs::AddressHandle;
        let (source, family) = (self.settings.source_ip, self.settings.family);
        let listen_at = source.unwrap_or(family.unspecified());
        let zero = Dest::default();
        let both_send = self.settings.tool.test == super::Test::Lat || self.settings.duplex;
        let timeout = super::channel::SETUP_TIMEOUT;
        if let Some(host) = &a.server {
            self.channel.hand_shake(&zero, false, Wait::Setup)?;
            let addr = family.resolve(host, a.port)?;
            let start = std::time::Instant::now();
            for q in 0..self.qps.len() {
                let qpn = self.qps[q].qp_num();
                let (id, peer) = retry_rejected(start, || {
                    let mut id =
                        CmId::resolve_ud(source, addr, self.settings.qos.tos, self.attention)?;
                    let peer = id.connect_ud(qpn, timeout)?;
                    Ok((id, peer))
                })?;
                self.qps[q].set_qkey(peer.qkey)?;
                self.ud_qkey = peer.qkey;
                let ah = peer.address_handle(self.qps[q].pd())?;
                self.ud_peers.push((ah, peer.qpn));
                if both_send {
                    self.send_own_qpn(q)?;
                }
                self.cm_ud_ids.push(id);
            }
        } else {
            let backlog = self.qps.len() as i32;
            let listener = {
                let attention = self.attention;
                self.listen_in_handshake(|| CmId::listen_ud(listen_at, a.port, backlog, attention))?
            };
            for q in 0..self.qps.len() {
                let mut id = listener.next_request(Some(timeout))?;
                let qkey = id.ud_qkey()?;
                self.qps[q].set_qkey(qkey)?;
                self.ud_qkey = qkey;
                // The client's QP number arrives in the first datagram, GRH first.
                let off = self.geo.local(q as u64) as usize;
                let mut r = self.recvs_at(q, off, 44, 1)?;
                if both_send {
                    r.post(&mut self.qps[q], 1)?;
                }
                id.accept_ud(self.qps[q].qp_num())?;
                if both_send {
                    let cq = Arc::clone(self.qps[q].recv_cq());
                    let wc = crate::hot::poll_one(
                        &cq,
                        crate::hot::PollTimeout::new(self.attention).with_limit(timeout),
                    )?;
                    let qpn = wc.imm_data().ok_or_else(|| {
                        Error::Protocol(
                            "RDMA CM: the UD client's first SEND has no immediate".into(),
                        )
                    })?;
                    let mut grh = [0u8; 40];
                    self.mrs[q].read(off, &mut grh);
                    let ah = AddressHandle::reply_to(self.qps[q].pd(), &self.port, &wc, &grh)?;
                    self.ud_peers.push((ah, qpn));
                }
                self.cm_ud_ids.push(id);
            }
        }
        self.channel.hand_shake(&zero, false, Wait::Setup)?;
        Ok(())
    }

    /// The server's first handshake, with `listen` run before it answers, so that the client
    /// never finds the listener closed.
    #[cfg(has_rdmacm)]
    fn listen_in_handshake(
        &mut self,
        listen: impl FnOnce() -> Result<crate::verbs::cm::CmId>,
    ) -> Result<crate::verbs::cm::CmId> {
        let mut listener = None;
        self.channel
            .hand_shake_then(&Dest::default(), false, Wait::Setup, || {
                listener = Some(listen()?);
                Ok(())
            })?;
        Ok(listener.expect("set by the handshake"))
    }

    /// Tells the server QP `q`'s number: a SEND with it as immediate (perftest's UD lookup).
    #[cfg(has_rdmacm)]
    fn send_own_qpn(&mut self, q: usize) -> Result<()> {
        let spec = crate::hot::SendSpec {
            op: crate::verbs::Op::SendImm(self.qps[q].qp_num()),
            postlist: 1,
            size: 4,
            stride: 0,
            local_offset: self.geo.local(q as u64) as usize,
            remote_offset: 0,
            inline: false,
        };
        let mut b = self.send_batch(q, spec, None)?;
        b.set_signaled(0, true);
        b.post(&mut self.qps[q])?;
        let cq = Arc::clone(self.qps[q].send_cq());
        crate::hot::poll_one(&cq, crate::hot::PollTimeout::new(self.attention)).map(|_| ())
    }

    #[cfg(not(has_rdmacm))]
    pub(super) fn connect_through_cm(&mut self, a: &PerfArgs) -> Result<()> {
        cm_channel(a, &self.settings, self.attention).map(|_| ())
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

/// Retries `attempt` while the server rejects it, until the set-up timeout from `start`: the
/// listener may not be there yet (perftest opens it late).
#[cfg(has_rdmacm)]
fn retry_rejected<T>(
    start: std::time::Instant,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    loop {
        match attempt() {
            Err(Error::Config(_)) if start.elapsed() < super::channel::SETUP_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(100));
            }
            r => return r,
        }
    }
}
