//! ud-sender (outbound UD SEND rate) and ud-receiver (inbound UD SEND rate).
//!
//! ud-sender: each server thread round-robins inlined SENDs over `num-clients` client UD QPs, which
//! only post RECVs and count what arrives. ud-receiver: client threads send SEND_WITH_IMM (imm 3185,
//! checked) to server thread `id mod num-threads`; each server polls up to `postlist` CQEs and
//! reposts that many RECVs with one `ibv_post_recv`. RECVs are `size + 40` bytes (the GRH).
//! UD has no flow control: SENDs that find no RECV are dropped, so receivers count what arrived.

use clap::Parser;

use super::common::{
    check_inline, fill_byte, port_index_for, require, CommonArgs, Lull, QueueArgs, Topology,
};
use super::endpoint::{publish_done, selective_loop, Endpoint, EndpointSpec};
use super::runner::{run_threads, Role};
use crate::control::stop_requested;
use crate::error::{Error, Result};
use crate::hot::{Op, RecvBatch, SendBatch, SendSpec, GRH_BYTES};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::registry::{PeerWatch, Registry};
use crate::stats::{Counters, RunInfo};
use crate::verbs::{QpType, WorkCompletion};

/// The immediate every ud-receiver SEND carries (and the server checks).
pub const IMM: u32 = 3185;
const POLL_BATCH: usize = 64;

/// Flags of ud-sender and ud-receiver.
#[derive(Parser, Debug, Clone)]
pub struct UdArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Bytes per SEND (inlined)
    #[arg(long, default_value_t = 32)]
    pub size: u64,
    /// Senders: WRs per doorbell. ud-receiver servers: CQEs polled (and RECVs reposted) at once
    #[arg(long, default_value_t = 64)]
    pub postlist: u32,
    /// ud-sender: client UD QPs each server thread sends to, round-robin (kAppNumClients)
    #[arg(long, alias = "num_clients", default_value_t = 1)]
    pub num_clients: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    /// RECVs kept posted by receivers (kHrdRQDepth)
    #[arg(long, alias = "rq_depth", default_value_t = 2048)]
    pub rq_depth: u32,
    /// Largest postlist accepted (ud-sender: 128, ud-receiver: 64 in the original)
    #[arg(long, alias = "max_postlist", default_value_t = 128)]
    pub max_postlist: u32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// ud-sender's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ud-sender",
    version,
    args_override_self = true,
    about = "Outbound UD SEND rate (ATC'16 rdma_bench): server threads send to client UD QPs"
)]
pub struct SenderArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ud: UdArgs,
}

/// ud-receiver's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ud-receiver",
    version,
    args_override_self = true,
    about = "Inbound UD SEND rate (ATC'16 rdma_bench): client threads send to server UD QPs"
)]
pub struct ReceiverArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ud: UdArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bench {
    Sender,
    Receiver,
}

/// Runs ud-sender.
pub fn run_sender(a: SenderArgs) -> Result<()> {
    run(Bench::Sender, &a.ud)
}

/// Runs ud-receiver.
pub fn run_receiver(a: ReceiverArgs) -> Result<()> {
    run(Bench::Receiver, &a.ud)
}

/// The checks that refuse a run before anything is made.
pub fn validate(a: &UdArgs, sending: bool) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    require(a.num_clients >= 1, || {
        "num-clients must be at least 1".into()
    })?;
    require(a.size >= 1, || "size must be at least 1 byte".into())?;
    require(a.rq_depth >= 1, || "rq-depth must be at least 1".into())?;
    if sending {
        a.queue.check(a.postlist, a.max_postlist)?;
        check_inline(a.size, a.queue.max_inline, "SENDs")?;
    } else {
        require(a.postlist >= 1 && a.postlist <= a.rq_depth, || {
            format!(
                "postlist ({}) must be between 1 and rq-depth ({})",
                a.postlist, a.rq_depth
            )
        })?;
    }
    require(a.size + GRH_BYTES as u64 <= 4096, || {
        format!(
            "size {} plus the 40-byte GRH exceeds the 4096-byte UD MTU",
            a.size
        )
    })
}

fn run(bench: Bench, a: &UdArgs) -> Result<()> {
    // ud-sender: servers send; ud-receiver: clients send.
    let sending = a.topo.is_client == (bench == Bench::Receiver);
    validate(a, sending)?;
    let first_id = a.topo.first_id();
    let info = RunInfo {
        bench: if bench == Bench::Sender {
            "ud-sender"
        } else {
            "ud-receiver"
        },
        role: a.topo.role_name(),
        op: if sending { "SEND" } else { "RECV" },
        size: a.size,
        postlist: u64::from(a.postlist),
        first_id,
        json: a.common.json,
    };
    let threads = a.topo.threads();
    println!("main: Using {threads} threads");
    run_threads(info, Role::Counting, threads, &a.common, |t, counters| {
        let global_id = first_id + t;
        let spec = EndpointSpec {
            qp_type: QpType::Ud,
            queue_depth: a.queue.queue_depth,
            recv_depth: if sending { 1 } else { a.rq_depth },
            max_inline: a.queue.max_inline,
            buf_size: 4096,
            fill: fill_byte(sending, global_id),
            ex: false,
            access: None,
        };
        let port = a
            .common
            .open_port(port_index_for(&a.common, a.topo.dual_port, global_id))?;
        let mut ep = Endpoint::new(&port, spec, a.common.placement())?;
        let reg = a.common.registry()?;
        let peers: Vec<String> = match (bench, sending) {
            (Bench::Sender, true) => (0..a.num_clients).map(|c| format!("client-{c}")).collect(),
            (Bench::Receiver, true) => vec![format!("server-{}", global_id % threads)],
            _ => vec![],
        };
        let me = format!("{}-{global_id}", a.topo.role_name().to_lowercase());
        if sending {
            send_loop(a, bench, &mut ep, &reg, &me, &peers, t, counters)
        } else {
            recv_loop(a, bench, &mut ep, &reg, &me, t, counters)
        }
    })?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn send_loop(
    a: &UdArgs,
    bench: Bench,
    ep: &mut Endpoint,
    reg: &Arc<Registry>,
    me: &str,
    peers: &[String],
    t: usize,
    counters: &Counters,
) -> Result<()> {
    // Receivers watch our entry (UD tells them nothing when we die) and wait for our done marker.
    reg.announce(me, &ep.info())?;
    let mut dests = Vec::with_capacity(peers.len());
    // UD never reports a dead receiver: the report clock watches their registry entries instead.
    let mut watches = Vec::with_capacity(peers.len());
    for p in peers {
        let e = reg.find_ready(p, a.common.wait())?;
        let ah = ep.ah_to(&e.info).map_err(|err| {
            Error::config(format!(
                "cannot make an address handle to {p} (GID {}, from its registry entry): {err}",
                e.info.gid()
            ))
        })?;
        dests.push((ah, e.info.qpn));
        watches.push(reg.watch(p, e.run_id, p));
    }
    let op = if bench == Bench::Receiver {
        Op::SendImm(IMM)
    } else {
        Op::Send
    };
    let spec = SendSpec {
        op,
        postlist: a.postlist as usize,
        size: a.size as u32,
        stride: 0,
        local_offset: 0,
        remote_offset: 0,
        inline: true,
    };
    let (qp, mr) = ep.parts();
    let (ah0, qpn0) = &dests[0];
    let mut batch = SendBatch::new_ud(qp, mr, spec, ah0, *qpn0)?;
    for i in 0..batch.len() {
        let (ah, qpn) = &dests[i % dests.len()];
        batch.set_ud_dest(qp, i, ah, *qpn)?;
    }
    let counter = a.queue.counter();
    selective_loop(qp, &mut batch, counter, a.common.op_limit(), t, counters)?;
    drop(watches);
    publish_done(reg, me)
}

fn recv_loop(
    a: &UdArgs,
    bench: Bench,
    ep: &mut Endpoint,
    reg: &Arc<Registry>,
    me: &str,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let len = (a.size as usize + GRH_BYTES) as u32;
    let info = ep.info();
    let (qp, mr) = ep.parts();
    // Every RECV lands in the same bytes: the rate, not the data, is measured (as the original).
    let mut recvs = RecvBatch::new(qp, mr, a.rq_depth as usize, len, 0, 0)?;
    recvs.post(qp, a.rq_depth as usize)?;
    reg.announce(me, &info)?;
    let want = if bench == Bench::Receiver {
        a.postlist as usize
    } else {
        POLL_BATCH
    };
    let mut wcs = vec![WorkCompletion::default(); want];
    let cq = std::sync::Arc::clone(qp.recv_cq());
    let mut ops = 0u64;
    let mut bad_imm = 0u64;
    // A receiver's rate covers first to last arrival, not the quiet after senders stop.
    let mut lull = Lull::new(t);
    let mut sender = SenderWatch::default();
    while !stop_requested() {
        let n = cq.poll(&mut wcs)?;
        if n == 0 {
            // Senders announce when they finish; look now and then (by the clock, not by a
            // count of polls) so the poll loop stays tight.
            if lull.empty(counters) && bench == Bench::Sender && sender.finished(reg)? {
                break;
            }
            continue;
        }
        lull.busy(counters);
        for wc in &wcs[..n] {
            wc.result()?;
            if bench == Bench::Receiver && wc.imm_data() != Some(IMM) {
                bad_imm += 1;
            }
        }
        recvs.post(qp, n)?;
        ops += n as u64;
        counters.set(t, ops);
    }
    lull.end(counters);
    if bad_imm > 0 {
        return Err(Error::Verify(format!(
            "{bad_imm} SENDs arrived without immediate {IMM}"
        )));
    }
    if a.common.verify && bench == Bench::Receiver && ops == 0 {
        return Err(Error::Verify("no SEND arrived".into()));
    }
    if a.common.verify && bench == Bench::Receiver {
        println!("main: verify ok: {ops} SENDs carried immediate {IMM}");
    }
    if sender.done && ops == 0 {
        return Err(Error::PeerLost {
            peer: SENDER.into(),
            what: "it finished, but none of its SENDs arrived here".into(),
        });
    }
    // Peers that watch us see that we left on purpose.
    publish_done(reg, me)
}

/// The ud-sender server thread whose end a receiving client waits for.
const SENDER: &str = "server-0";

/// A ud-sender client's view of the sender: once its entry appears, the report clock watches its
/// liveness (a killed sender ends the client with an error), and its done marker ends the client.
/// (ud-receiver servers do not know their clients and run until stopped, as in the original.)
#[derive(Default)]
struct SenderWatch {
    run: Option<u64>,
    _watch: Option<PeerWatch>,
    next_look: Option<Instant>,
    done: bool,
}

impl SenderWatch {
    /// True once the sender's done marker is up (looks at most every 200 ms).
    fn finished(&mut self, reg: &Arc<Registry>) -> Result<bool> {
        let now = Instant::now();
        if self.next_look.is_some_and(|t| now < t) {
            return Ok(false);
        }
        self.next_look = Some(now + Duration::from_millis(200));
        if self.run.is_none() {
            if let Some(e) = reg.lookup(SENDER)? {
                self.run = Some(e.run_id);
                self._watch = Some(reg.watch(SENDER, e.run_id, SENDER));
            }
        }
        self.done = match self.run {
            Some(run) => reg.is_ready(&format!("{SENDER}-done"), Some(run))?,
            None => false,
        };
        Ok(self.done)
    }
}
