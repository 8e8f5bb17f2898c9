//! A worker thread's verbs objects, and how it meets its peer through the registry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::meter::Meter;
use crate::error::{Error, Result};
use crate::hot::{Op, RecvBatch, SendBatch, SendSpec};
use crate::mem::Placement;
use crate::registry::{Entry, Registry, WaitOptions, ENTRY_TTL_S};
use crate::verbs::{
    Access, AddressHandle, MemoryRegion, Port, ProtectionDomain, QpCaps, QpInfo, QpSpec, QpType,
    QueuePair, ReadDepth, Resources, WorkCompletion,
};

/// One QP with its CQ and a registered buffer. The region owns the memory and the QP keeps the
/// region alive while WRs may reference it, so these drop safely in any order; the fields are
/// private all the same, so that nothing swaps them under a running loop.
///
/// Reading the region compiles:
/// ```
/// # use rdma_bench::framework::Endpoint;
/// fn first_byte(ep: &Endpoint) -> u8 {
///     ep.mr().to_vec(0, 1)[0]
/// }
/// ```
/// Swapping it out from under the QP does not:
/// ```compile_fail,E0616
/// # use std::sync::Arc;
/// # use rdma_bench::framework::Endpoint;
/// # use rdma_bench::verbs::MemoryRegion;
/// fn swap(ep: &mut Endpoint, other: Arc<MemoryRegion>) -> Arc<MemoryRegion> {
///     std::mem::replace(&mut ep.mr, other)
/// }
/// ```
pub struct Endpoint {
    qp: QueuePair,
    mr: Arc<MemoryRegion>,
    pd: Arc<ProtectionDomain>,
}

/// What an endpoint is made of.
#[derive(Debug, Clone, Copy)]
pub struct EndpointSpec {
    /// Transport.
    pub qp_type: QpType,
    /// Send queue depth.
    pub queue_depth: u32,
    /// Receive queue depth (UD receivers pre-post this many RECVs).
    pub recv_depth: u32,
    /// Requested inline limit.
    pub max_inline: u32,
    /// Buffer bytes.
    pub buf_size: usize,
    /// Fill the buffer with this byte.
    pub fill: u8,
    /// Make the QP with `ibv_create_qp_ex`, enabling the `ibv_wr_*` post path.
    pub ex: bool,
    /// The buffer's access flags [default: what the transport allows peers: RC everything, UC
    /// WRITE, UD none].
    pub access: Option<Access>,
}

impl Endpoint {
    /// Makes PD, CQ, QP, buffer (placed as `place` says) and MR on `port`.
    pub fn new(port: &Port, spec: EndpointSpec, place: Placement) -> Result<Endpoint> {
        let res = Resources::new(port)?;
        let caps = QpCaps {
            max_send_wr: spec.queue_depth,
            max_recv_wr: spec.recv_depth.max(1),
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: spec.max_inline,
        };
        let qp = res.qp(QpSpec {
            qp_type: spec.qp_type,
            caps,
            ex: spec.ex,
        })?;
        let access = spec.access.unwrap_or(match spec.qp_type {
            QpType::Rc => {
                Access::LOCAL_WRITE
                    | Access::REMOTE_WRITE
                    | Access::REMOTE_READ
                    | Access::REMOTE_ATOMIC
            }
            QpType::Uc => Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            QpType::Ud => Access::LOCAL_WRITE,
        });
        let mr = res.region(spec.buf_size, place, access)?;
        mr.fill(spec.fill);
        Ok(Endpoint {
            qp,
            mr,
            pd: Arc::clone(res.pd()),
        })
    }

    /// The queue pair.
    pub fn qp(&self) -> &QueuePair {
        &self.qp
    }
    /// The queue pair, for posting.
    pub fn qp_mut(&mut self) -> &mut QueuePair {
        &mut self.qp
    }
    /// The registered buffer.
    pub fn mr(&self) -> &Arc<MemoryRegion> {
        &self.mr
    }
    /// The QP (to post on) and the region (to build batches over) at once.
    pub fn parts(&mut self) -> (&mut QueuePair, &Arc<MemoryRegion>) {
        (&mut self.qp, &self.mr)
    }

    /// What a peer needs to reach this endpoint and its buffer.
    pub fn info(&self) -> QpInfo {
        self.qp.info(Some(&self.mr))
    }

    /// An AH towards a UD peer.
    pub fn ah_to(&self, peer: &QpInfo) -> Result<Arc<AddressHandle>> {
        AddressHandle::new(&self.pd, self.qp.port(), peer)
    }

    /// Meets the connected peer `peer` as `me` (see [`Registry::rendezvous`], which connects only
    /// to an entry whose heartbeat moves), exposing this endpoint's buffer, then checks the
    /// connection itself ([`hello`]).
    pub fn rendezvous(
        &mut self,
        reg: &Registry,
        me: &str,
        peer: &str,
        wait: WaitOptions,
    ) -> Result<Entry> {
        let info = self.info();
        connect_qp(&mut self.qp, &self.mr, &info, reg, me, peer, wait)
    }

    /// Makes an endpoint on `port` and meets `peer` with it.
    #[allow(clippy::too_many_arguments)]
    pub fn meet(
        port: &Port,
        spec: EndpointSpec,
        place: Placement,
        reg: &Registry,
        me: &str,
        peer: &str,
        wait: WaitOptions,
    ) -> Result<(Endpoint, Entry)> {
        let mut ep = Endpoint::new(port, spec, place)?;
        let remote = ep.rendezvous(reg, me, peer, wait)?;
        Ok((ep, remote))
    }
}

/// Meets the connected peer `peer` as `me` for a QP that exposes `info` (see
/// [`Registry::rendezvous`], which connects only to an entry whose heartbeat moves), then checks
/// the connection itself ([`hello`]). `mr` is any region of the QP's PD (the hello moves no bytes).
pub fn connect_qp(
    qp: &mut QueuePair,
    mr: &Arc<MemoryRegion>,
    info: &QpInfo,
    reg: &Registry,
    me: &str,
    peer: &str,
    wait: WaitOptions,
) -> Result<Entry> {
    let mut recv = RecvBatch::new(qp, mr, 1, 0, 0, 0)?;
    let remote = reg.rendezvous(me, peer, info, wait, |r| {
        let depth = qp.connect(r)?;
        note_read_depth(&depth, qp);
        // Before we say "ready": the peer's hello may follow at once.
        recv.post(qp, 1)
    })?;
    hello(qp, mr, reg.run_id(), peer, &remote, wait)?;
    Ok(remote)
}

/// The original's 16 READs in flight per QP, held lower by a device or a peer, is said once per
/// process: a READ rate means little without its depth.
fn note_read_depth(depth: &ReadDepth, qp: &QueuePair) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if let Some(n) = depth.note(qp.port().context().name()) {
        if !SAID.swap(true, Ordering::Relaxed) {
            eprintln!("main: {n}");
        }
    }
}

/// How long a connected peer has to answer the hello once both sides said "ready".
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(3);

/// The connection check after RTS: one zero-byte SEND with immediate (our run id's low half)
/// each way. The caller posted one RECV before marking itself ready; the peer did too, so both
/// SENDs find a RECV. A killed run's QP never answers: RC fails its SEND after the transport's
/// retries, UC's hello simply never arrives; either is [`Error::PeerLost`] within
/// [`HELLO_TIMEOUT`]. Leaves the CQ empty.
pub fn hello(
    qp: &mut QueuePair,
    mr: &Arc<MemoryRegion>,
    my_run: u64,
    peer: &str,
    remote: &Entry,
    wait: WaitOptions,
) -> Result<()> {
    hello_all(&mut [Hello { qp, peer, remote }], mr, my_run, wait)
}

/// One connection of [`hello_all`]. Its QP's send and receive completions go to one CQ.
pub struct Hello<'a> {
    /// The connected QP.
    pub qp: &'a mut QueuePair,
    /// The peer's name, for errors.
    pub peer: &'a str,
    /// The peer's entry (its run id is what its hello carries).
    pub remote: &'a Entry,
}

/// [`hello`] over many connections at once: every SEND is posted before any answer is awaited,
/// so peers that check their connections in different orders never wait on each other. `mr` is
/// a region of the QPs' PD (the hellos move no bytes).
pub fn hello_all(
    conns: &mut [Hello<'_>],
    mr: &Arc<MemoryRegion>,
    my_run: u64,
    wait: WaitOptions,
) -> Result<()> {
    let spec = SendSpec {
        op: Op::SendImm(my_run as u32),
        postlist: 1,
        size: 0,
        stride: 0,
        local_offset: 0,
        remote_offset: 0,
        inline: true,
    };
    for c in conns.iter_mut() {
        let mut send = SendBatch::new(c.qp, mr, spec, None)?;
        send.set_signaled(0, true);
        send.post(c.qp)?;
    }
    // A peer with many connections of its own answers ours only once all of its peers were
    // ready: give it the whole connect timeout (a killed peer still fails RC's SEND at once).
    let bound = if conns.len() > 1 {
        HELLO_TIMEOUT.max(wait.timeout)
    } else {
        HELLO_TIMEOUT
    };
    let deadline = Instant::now() + bound;
    for c in conns.iter() {
        await_hello(c, deadline, wait)?;
    }
    Ok(())
}

/// Waits for our hello's completion and the peer's hello on `c`.
fn await_hello(c: &Hello<'_>, deadline: Instant, wait: WaitOptions) -> Result<()> {
    let lost = |what: String| Error::PeerLost {
        peer: c.peer.to_string(),
        what,
    };
    let cq = c.qp.send_cq();
    let (mut sent, mut heard) = (false, false);
    let mut wc = [WorkCompletion::default()];
    while !(sent && heard) {
        if cq.poll(&mut wc)? == 0 {
            if Instant::now() >= deadline {
                return Err(lost(format!(
                    "its QP did not answer the connection check in time (a killed run's \
                     entry? it expires within {ENTRY_TTL_S} s)"
                )));
            }
            if wait.stop.is_some_and(|a| a.stop_requested()) {
                return Err(Error::Stopped(format!(
                    "stopped while checking the connection to {}",
                    c.peer
                )));
            }
            std::thread::yield_now();
            continue;
        }
        if let Err(e) = wc[0].result() {
            return Err(lost(format!(
                "the connection check failed ({e}): a killed run's entry? it expires within \
                 {ENTRY_TTL_S} s"
            )));
        }
        if wc[0].opcode() == sys_wc_send() {
            sent = true;
        } else {
            if wc[0].imm_data() != Some(c.remote.run_id as u32) {
                return Err(Error::protocol(format!(
                    "the connection check from {} carried {:?}, not its run id",
                    c.peer,
                    wc[0].imm_data()
                )));
            }
            heard = true;
        }
    }
    Ok(())
}

/// `IBV_WC_SEND`, the opcode of a SEND's completion.
fn sys_wc_send() -> u32 {
    crate::verbs::WC_SEND
}

/// Marks this side finished, so passive peers can leave (the marker outlives this process).
pub fn publish_done(reg: &Registry, me: &str) -> Result<()> {
    reg.publish_done(me)
}

/// How long a passive side whose own `--duration` ended waits on for its active peers' done
/// markers: their last WRs may still be in flight (retransmitted under loss), and they complete
/// only while this side's QPs are there to answer.
pub const DONE_GRACE: Duration = Duration::from_secs(10);

/// A passive side's measured window: idle until the active peers `peers` (name, run id) all say
/// they are done, or the run stops. A stop by `--duration` waits on up to [`DONE_GRACE`] for the
/// markers still missing (one grace for all peers); a signal or a failure ends the wait at once.
/// Looks every 200 ms; the checkpoints keep the report clock going.
pub fn idle_until_peers_done(
    reg: &Registry,
    peers: &[(String, u64)],
    m: &mut Meter<'_>,
) -> Result<()> {
    let at = m.attention();
    let mut grace = crate::hot::WaitClock::default();
    for (peer, run) in peers {
        let done = format!("{peer}-done");
        loop {
            let going = m.checkpoint();
            if !going
                && (at.failed() || at.stopped_by_signal() || grace.look(DONE_GRACE) >= DONE_GRACE)
            {
                return Ok(());
            }
            if reg.is_ready(&done, Some(*run))? {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Ok(())
}
