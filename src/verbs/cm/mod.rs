//! RDMA CM (librdmacm): connecting RC QPs by IP address, as perftest's `-R` does, and finding a
//! UD peer's QP ([`ud`]: SIDR).
//!
//! The QPs stay ours: made by [`QueuePair::new`] on our own context, moved through RTR and RTS
//! with the attributes the CM computes (`rdma_init_qp_attr`), their numbers handed to the CM in
//! the connection parameters. So a QP's lifetime and keep-alive rules are the same with and
//! without the CM, and an id is only the connection's handle: destroying it never touches a QP.
//!
//! Every id owns its event channel's lifetime through an `Arc`; waits on a channel are bounded
//! (`poll` on its fd) and give up on a stop request.

use std::net::{IpAddr, SocketAddr};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::QueuePair;
use crate::attention::Attention;
use crate::error::{Error, Result};
use crate::sys;
use sys::rdma_cm_event_type as E;

mod ud;
pub use ud::UdPeer;

/// How long address and route resolution may take (perftest's 2000 ms).
const RESOLVE_MS: i32 = 2000;

/// An event channel (`rdma_event_channel`): where the CM reports what happened to its ids.
pub struct EventChannel {
    raw: NonNull<sys::rdma_event_channel>,
    /// A stop ends a wait for an event.
    attention: Attention,
}

// SAFETY: librdmacm's channel calls are thread-safe; the channel is only read through `next`.
unsafe impl Send for EventChannel {}
// SAFETY: as above.
unsafe impl Sync for EventChannel {}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: every id on this channel holds an Arc to it, so none is left.
        unsafe { sys::rdma_destroy_event_channel(self.raw.as_ptr()) };
    }
}

/// What an event said, copied out before it is acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct CmEvent {
    /// `rdma_cm_event_type`.
    pub kind: u32,
    /// Its status (errno-like, or the reject reason).
    pub status: i32,
    /// The id the event is about (a new one for a connect request).
    id: *mut sys::rdma_cm_id,
    /// The listener, for a connect request.
    listen_id: *mut sys::rdma_cm_id,
    /// A UDP-space id's ESTABLISHED: the peer's QP, Q_Key and path.
    ud: Option<UdPeer>,
}

/// The CM's name for an event type.
pub fn event_name(kind: u32) -> String {
    // SAFETY: rdma_event_str returns a static string for any value.
    unsafe { std::ffi::CStr::from_ptr(sys::rdma_event_str(kind)) }
        .to_string_lossy()
        .into_owned()
}

impl EventChannel {
    /// A new channel; its waits end on a stop of `attention`'s run.
    pub fn new(attention: Attention) -> Result<Arc<EventChannel>> {
        // SAFETY: no arguments; returns NULL with errno on failure.
        let raw = unsafe { sys::rdma_create_event_channel() };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::last_os("rdma_create_event_channel (is the rdma_ucm module loaded?)")
        })?;
        Ok(Arc::new(EventChannel { raw, attention }))
    }

    /// The next event, within `timeout` (None: waits until a stop request); acknowledged.
    pub fn next(&self, timeout: Option<Duration>) -> Result<CmEvent> {
        let start = Instant::now();
        // SAFETY: the channel is alive; `fd` is its file descriptor.
        let fd = unsafe { self.raw.as_ref().fd };
        loop {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut p, 1, 100) };
            if n > 0 {
                break;
            }
            if self.attention.stop_requested() {
                return Err(Error::Stopped(
                    "stopped waiting for an RDMA CM event".into(),
                ));
            }
            if let Some(t) = timeout {
                if start.elapsed() > t {
                    return Err(Error::timeout(
                        "no RDMA CM event".to_string(),
                        t,
                        Some("the peer is not answering on RDMA CM"),
                    ));
                }
            }
        }
        let mut ev: *mut sys::rdma_cm_event = std::ptr::null_mut();
        // SAFETY: the channel is alive; `ev` receives an event we acknowledge below.
        let rc = unsafe { sys::rdma_get_cm_event(self.raw.as_ptr(), &mut ev) };
        if rc != 0 || ev.is_null() {
            return Err(Error::last_os("rdma_get_cm_event"));
        }
        // SAFETY: `ev` is a live event until acknowledged; its fields are plain data, and the
        // `ud` member of its parameter union is the one set for a UDP id's ESTABLISHED.
        let out = unsafe {
            let udp = !(*ev).id.is_null() && (*(*ev).id).ps == sys::rdma_port_space::RDMA_PS_UDP;
            CmEvent {
                kind: (*ev).event,
                status: (*ev).status,
                id: (*ev).id,
                listen_id: (*ev).listen_id,
                ud: (udp && (*ev).event == E::RDMA_CM_EVENT_ESTABLISHED).then(|| UdPeer {
                    ah_attr: (*ev).param.ud.ah_attr,
                    qpn: (*ev).param.ud.qp_num,
                    qkey: (*ev).param.ud.qkey,
                }),
            }
        };
        // SAFETY: `ev` came from rdma_get_cm_event and is acknowledged once.
        unsafe { sys::rdma_ack_cm_event(ev) };
        Ok(out)
    }
}

/// The connection parameters both sides send (`rdma_conn_param`, without private data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmParams {
    /// READs / atomics this side accepts in flight.
    pub responder_resources: u8,
    /// READs / atomics this side keeps in flight.
    pub initiator_depth: u8,
    /// Transport retries.
    pub retry_count: u8,
    /// RNR retries (7: forever).
    pub rnr_retry_count: u8,
}

/// A CM id (`rdma_cm_id`) in the TCP port space (RC connections) or the UDP one (UD peers);
/// destroyed on drop (the kernel then sends the peer a disconnect if the connection is up).
pub struct CmId {
    raw: NonNull<sys::rdma_cm_id>,
    channel: Arc<EventChannel>,
}

// SAFETY: an id is used by one thread at a time (`&mut` for every state change).
unsafe impl Send for CmId {}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the id is alive; no QP was created on it (ours are separate), so destroying it
        // frees only the CM's state.
        unsafe { sys::rdma_destroy_id(self.raw.as_ptr()) };
    }
}

/// `a` as the C socket address the CM calls read: a `sockaddr_in` or a `sockaddr_in6`, by its
/// family, in storage large enough for either.
fn sockaddr(a: SocketAddr) -> libc::sockaddr_storage {
    socket2::SockAddr::from(a).as_storage()
}

/// `rdma_set_option`'s level and option numbers (the kernel's ABI, fixed; older headers lack
/// some of the names).
const RDMA_OPTION_ID: i32 = 0;
const RDMA_OPTION_ID_TOS: i32 = 0;
const RDMA_OPTION_ID_ACK_TIMEOUT: i32 = 3;

fn check(rc: i32, what: &'static str) -> Result<()> {
    if rc != 0 {
        return Err(Error::last_os(what));
    }
    Ok(())
}

impl CmId {
    fn new(channel: &Arc<EventChannel>, ps: u32) -> Result<CmId> {
        let mut raw: *mut sys::rdma_cm_id = std::ptr::null_mut();
        // SAFETY: the channel is alive; `raw` receives the new id.
        let rc = unsafe {
            sys::rdma_create_id(channel.raw.as_ptr(), &mut raw, std::ptr::null_mut(), ps)
        };
        check(rc, "rdma_create_id")?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("rdma_create_id"))?;
        Ok(CmId {
            raw,
            channel: Arc::clone(channel),
        })
    }

    /// Waits for the next event of this id's channel, which must be `want` for this id.
    fn expect(&self, want: u32, timeout: Duration) -> Result<CmEvent> {
        let ev = self.channel.next(Some(timeout))?;
        if ev.kind != want || ev.id != self.raw.as_ptr() {
            return Err(Error::Protocol(format!(
                "RDMA CM: {} (status {}) where {} was expected",
                event_name(ev.kind),
                ev.status,
                event_name(want)
            )));
        }
        Ok(ev)
    }

    /// The attention its channel's waits end on.
    pub fn attention(&self) -> Attention {
        self.channel.attention
    }

    /// A new id on its own channel (its waits end on a stop), its address and route to `dst`
    /// resolved; with `tos`, the route's traffic class (`RDMA_OPTION_ID_TOS`: on RoCE v2 the
    /// IP TOS byte of the connection's packets, both ways).
    pub fn resolve(dst: SocketAddr, tos: Option<u8>, attention: Attention) -> Result<CmId> {
        Self::resolve_from(None, dst, tos, attention)
    }

    /// [`CmId::resolve`] from the local address `src` (any, as the route picks, when None).
    pub fn resolve_from(
        src: Option<IpAddr>,
        dst: SocketAddr,
        tos: Option<u8>,
        attention: Attention,
    ) -> Result<CmId> {
        Self::resolve_in(src, dst, sys::rdma_port_space::RDMA_PS_TCP, tos, attention)
    }

    fn resolve_in(
        src: Option<IpAddr>,
        dst: SocketAddr,
        ps: u32,
        tos: Option<u8>,
        attention: Attention,
    ) -> Result<CmId> {
        let id = CmId::new(&EventChannel::new(attention)?, ps)?;
        let mut sa = sockaddr(dst);
        let mut from = src.map(|ip| sockaddr(SocketAddr::new(ip, 0)));
        let from_ptr = from.as_mut().map_or(std::ptr::null_mut(), |f| {
            (f as *mut libc::sockaddr_storage).cast()
        });
        // SAFETY: the id is alive; `sa` and `from` (when given) are valid socket addresses of
        // their family for the call.
        let rc = unsafe {
            sys::rdma_resolve_addr(
                id.raw.as_ptr(),
                from_ptr,
                (&mut sa as *mut libc::sockaddr_storage).cast(),
                RESOLVE_MS,
            )
        };
        check(rc, "rdma_resolve_addr")?;
        let wait = Duration::from_millis(RESOLVE_MS as u64 + 1000);
        id.expect(E::RDMA_CM_EVENT_ADDR_RESOLVED, wait)
            .map_err(|e| Error::config(format!("RDMA CM cannot resolve {dst}: {e}")))?;
        if let Some(tos) = tos {
            // The option is read when the route is resolved, so it goes in between.
            id.set_u8_option(
                RDMA_OPTION_ID_TOS,
                tos,
                "rdma_set_option(RDMA_OPTION_ID_TOS)",
            )?;
        }
        // SAFETY: the id is alive and its address resolved.
        let rc = unsafe { sys::rdma_resolve_route(id.raw.as_ptr(), RESOLVE_MS) };
        check(rc, "rdma_resolve_route")?;
        id.expect(E::RDMA_CM_EVENT_ROUTE_RESOLVED, wait)
            .map_err(|e| Error::config(format!("RDMA CM has no route to {dst}: {e}")))?;
        Ok(id)
    }

    /// The local ACK timeout exponent its connection's QP takes at RTS
    /// (`RDMA_OPTION_ID_ACK_TIMEOUT`; perftest sets its `-u` so); call before connecting.
    pub fn set_ack_timeout(&mut self, exponent: u8) -> Result<()> {
        self.set_u8_option(
            RDMA_OPTION_ID_ACK_TIMEOUT,
            exponent,
            "rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)",
        )
    }

    /// Sets a one-byte `RDMA_OPTION_ID` option.
    fn set_u8_option(&self, name: i32, mut value: u8, what: &'static str) -> Result<()> {
        // SAFETY: the id is alive; the option is one byte, read during the call only.
        let rc = unsafe {
            sys::rdma_set_option(
                self.raw.as_ptr(),
                RDMA_OPTION_ID,
                name,
                (&mut value as *mut u8).cast(),
                1,
            )
        };
        check(rc, what)
    }

    /// A listening id on `port` of every IPv4 address (its waits end on a stop).
    pub fn listen(port: u16, backlog: i32, attention: Attention) -> Result<CmId> {
        Self::listen_on(IpAddr::from([0u8; 4]), port, backlog, attention)
    }

    /// [`CmId::listen`] on one address (`at`); on every address of its family when it is the
    /// unspecified one (`::` takes IPv4 clients too, as an IPv6 socket does by default).
    pub fn listen_on(at: IpAddr, port: u16, backlog: i32, attention: Attention) -> Result<CmId> {
        Self::listen_in(
            at,
            port,
            backlog,
            sys::rdma_port_space::RDMA_PS_TCP,
            attention,
        )
    }

    fn listen_in(
        at: IpAddr,
        port: u16,
        backlog: i32,
        ps: u32,
        attention: Attention,
    ) -> Result<CmId> {
        let id = CmId::new(&EventChannel::new(attention)?, ps)?;
        let mut sa = sockaddr(SocketAddr::new(at, port));
        // SAFETY: the id is alive; `sa` is a valid socket address of its family.
        let rc = unsafe {
            sys::rdma_bind_addr(
                id.raw.as_ptr(),
                (&mut sa as *mut libc::sockaddr_storage).cast(),
            )
        };
        if rc != 0 {
            return Err(Error::config(format!(
                "RDMA CM cannot listen on port {port} of {at}: {} (another server running? pick \
                 one with -p)",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: the id is alive and bound.
        let rc = unsafe { sys::rdma_listen(id.raw.as_ptr(), backlog) };
        check(rc, "rdma_listen")?;
        Ok(id)
    }

    /// On a listening id: the next connection request (events about ids already accepted are
    /// skipped), as a new id; None waits until a stop request.
    pub fn next_request(&self, timeout: Option<Duration>) -> Result<CmId> {
        loop {
            let ev = self.channel.next(timeout)?;
            if ev.kind == E::RDMA_CM_EVENT_CONNECT_REQUEST && ev.listen_id == self.raw.as_ptr() {
                let raw = NonNull::new(ev.id)
                    .ok_or_else(|| Error::Protocol("RDMA CM: a request without an id".into()))?;
                return Ok(CmId {
                    raw,
                    channel: Arc::clone(&self.channel),
                });
            }
        }
    }

    /// The name of the device the CM bound this id to (after resolution or a request).
    pub fn device_name(&self) -> Result<String> {
        // SAFETY: the id is alive; `verbs` is set once it is bound to a device.
        let verbs = unsafe { self.raw.as_ref().verbs };
        if verbs.is_null() {
            return Err(Error::config(
                "RDMA CM bound no RDMA device to this address",
            ));
        }
        // SAFETY: a live context's device; its name is a NUL-terminated C string.
        Ok(
            unsafe { std::ffi::CStr::from_ptr(sys::ibv_get_device_name((*verbs).device)) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// The device port the CM bound this id to.
    pub fn port_num(&self) -> u8 {
        // SAFETY: the id is alive.
        unsafe { self.raw.as_ref().port_num }
    }

    /// Moves `qp` to `state` with the attributes the CM computed for this connection.
    fn transition(&self, qp: &mut QueuePair, state: u32, rd_atomic: u8) -> Result<()> {
        let mut attr = sys::ibv_qp_attr {
            qp_state: state,
            ..Default::default()
        };
        let mut mask = 0i32;
        // SAFETY: the id is alive and connected far enough for `state`; out-pointers are valid.
        let rc = unsafe { sys::rdma_init_qp_attr(self.raw.as_ptr(), &mut attr, &mut mask) };
        check(rc, "rdma_init_qp_attr")?;
        // What this side accepts is its own choice (the peer learns it from our REQ or REP);
        // what it initiates may not exceed what the peer accepts, which the CM's value is.
        if state == sys::ibv_qp_state::IBV_QPS_RTR {
            attr.max_dest_rd_atomic = rd_atomic;
        } else {
            attr.max_rd_atomic = attr.max_rd_atomic.min(rd_atomic);
        }
        qp.modify_with(&attr, sys::ibv_qp_attr_mask(mask as u32))
    }

    /// INIT → RTR → RTS with this connection's attributes and `p`'s read depths.
    fn to_rts(&self, qp: &mut QueuePair, p: CmParams) -> Result<()> {
        let rtr = sys::ibv_qp_state::IBV_QPS_RTR;
        self.transition(qp, rtr, p.responder_resources.max(1))?;
        self.transition(qp, sys::ibv_qp_state::IBV_QPS_RTS, p.initiator_depth.max(1))
    }

    fn conn_param(qp: &QueuePair, p: CmParams) -> sys::rdma_conn_param {
        sys::rdma_conn_param {
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            retry_count: p.retry_count,
            rnr_retry_count: p.rnr_retry_count,
            qp_num: qp.qp_num(),
            ..Default::default()
        }
    }

    /// Active side: connects `qp` (in INIT) to the listener this id resolved. A rejection (no
    /// listener yet) is [`Error::Config`] naming it, so that a caller may retry.
    pub fn connect(&mut self, qp: &mut QueuePair, p: CmParams, timeout: Duration) -> Result<()> {
        let mut cp = Self::conn_param(qp, p);
        // SAFETY: the id is alive with its route resolved; `cp` is valid for the call.
        let rc = unsafe { sys::rdma_connect(self.raw.as_ptr(), &mut cp) };
        if rc != 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            // iWARP connects TCP in the call: no listener is a refusal here, not an event.
            if errno == libc::ECONNREFUSED {
                return Err(Error::config(
                    "RDMA CM: the server refused the connection: not listening yet?",
                ));
            }
            return Err(Error::verb("rdma_connect", errno));
        }
        let ev = self.channel.next(Some(timeout))?;
        match ev.kind {
            E::RDMA_CM_EVENT_CONNECT_RESPONSE => {}
            // iWARP has no REP/RTU: the kernel's iWARP CM moved the QP to RTS when the MPA
            // exchange ended, and says so with ESTABLISHED.
            E::RDMA_CM_EVENT_ESTABLISHED if self.is_iwarp() => return Ok(()),
            E::RDMA_CM_EVENT_REJECTED => {
                return Err(Error::config(format!(
                    "RDMA CM: the server rejected the connection (status {}): not listening yet?",
                    ev.status
                )))
            }
            other => {
                return Err(Error::Protocol(format!(
                    "RDMA CM: {} (status {}) instead of a connect response",
                    event_name(other),
                    ev.status
                )))
            }
        }
        self.to_rts(qp, p)?;
        // SAFETY: the id got its connect response; the QP is in RTS.
        check(
            unsafe { sys::rdma_establish(self.raw.as_ptr()) },
            "rdma_establish",
        )
    }

    /// Passive side: moves `qp` (in INIT) to RTS for this request and accepts it. On iWARP
    /// the kernel moves the QP once the MPA exchange ends, and this waits (up to `timeout`)
    /// for that: a SEND posted before would find the QP not yet in RTS.
    pub fn accept(&mut self, qp: &mut QueuePair, p: CmParams, timeout: Duration) -> Result<()> {
        let iwarp = self.is_iwarp();
        if !iwarp {
            self.to_rts(qp, p)?;
        }
        let mut cp = Self::conn_param(qp, p);
        // SAFETY: the id is a live connect request; `cp` is valid for the call.
        let rc = unsafe { sys::rdma_accept(self.raw.as_ptr(), &mut cp) };
        check(rc, "rdma_accept")?;
        if iwarp {
            self.expect(E::RDMA_CM_EVENT_ESTABLISHED, timeout)?;
        }
        Ok(())
    }

    /// Whether the device the CM bound this id to is iWARP (false before it is bound).
    fn is_iwarp(&self) -> bool {
        // SAFETY: the id is alive; `verbs`, once set, is a live context whose device and
        // transport never change.
        unsafe {
            let verbs = self.raw.as_ref().verbs;
            !verbs.is_null() && (*(*verbs).device).transport_type == sys::IBV_TRANSPORT_IWARP
        }
    }

    /// Starts a disconnect (the peer sees DISCONNECTED); errors are ignored: the connection may
    /// be gone already.
    pub fn disconnect(&mut self) {
        // SAFETY: the id is alive; with no CM-owned QP this only tells the kernel to disconnect.
        unsafe { sys::rdma_disconnect(self.raw.as_ptr()) };
    }

    /// Waits up to `timeout` for this id's DISCONNECTED; false if it did not come.
    pub fn wait_disconnected(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        while let Some(left) = timeout.checked_sub(start.elapsed()) {
            match self.channel.next(Some(left)) {
                Ok(ev)
                    if ev.kind == E::RDMA_CM_EVENT_DISCONNECTED && ev.id == self.raw.as_ptr() =>
                {
                    return true
                }
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    /// True if a DISCONNECTED for this id is waiting on its channel (does not block).
    pub fn peer_disconnected(&self) -> bool {
        // SAFETY: the channel is alive.
        let fd = unsafe { self.channel.raw.as_ref().fd };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no wait.
        if unsafe { libc::poll(&mut p, 1, 0) } <= 0 {
            return false;
        }
        matches!(self.channel.next(Some(Duration::ZERO)),
            Ok(ev) if ev.kind == E::RDMA_CM_EVENT_DISCONNECTED && ev.id == self.raw.as_ptr())
    }
}
