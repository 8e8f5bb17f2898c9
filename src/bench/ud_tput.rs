//! ud-sender (outbound UD SEND rate) and ud-receiver (inbound UD SEND rate).
//!
//! ud-sender: each server thread round-robins inlined SENDs over `num-clients` client UD QPs, which
//! only post RECVs and count what arrives. ud-receiver: client threads send SEND_WITH_IMM (imm 3185,
//! checked) to server thread `id mod num-threads`; each server polls up to `postlist` CQEs and
//! reposts that many RECVs with one `ibv_post_recv`. RECVs are `size + 40` bytes (the GRH).
//! UD has no flow control: SENDs that find no RECV are dropped, so receivers count what arrived.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::{
    self, check_inline, check_ud_size, counts_at_least_one, fill_byte, port_index_for,
    publish_done, require, Benchmark, CommonArgs, Endpoint, EndpointSpec, Family, Lull, Meter,
    Output, Plan, QueueArgs, Role, RoleSpec, ThreadCtx, Topology,
};
use crate::hot::{Op, RecvBatch, SendBatch, SendSpec, GRH_BYTES};
use crate::registry::{PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::{QpType, WorkCompletion};

/// The immediate every ud-receiver SEND carries (and the server checks).
pub const IMM: u32 = 3185;
const POLL_BATCH: usize = 64;

/// Flags of ud-sender and ud-receiver.
#[derive(Parser, Debug, Clone)]
pub(crate) struct UdArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Bytes per SEND (inlined)
    #[arg(long, default_value_t = 32, value_parser = crate::units::count::<u64>)]
    pub size: u64,
    /// Senders: WRs per doorbell. ud-receiver servers: CQEs polled (and RECVs reposted) at once
    #[arg(long, default_value_t = 64, value_parser = crate::units::count::<u32>)]
    pub postlist: u32,
    /// ud-sender: client UD QPs each server thread sends to, round-robin (kAppNumClients)
    #[arg(long, alias = "num_clients", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_clients: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    /// RECVs kept posted by receivers (kHrdRQDepth)
    #[arg(long, alias = "rq_depth", default_value_t = 2048, value_parser = crate::units::count::<u32>)]
    pub rq_depth: u32,
    /// Largest postlist accepted (ud-sender: 128, ud-receiver: 64 in the original)
    #[arg(long, alias = "max_postlist", default_value_t = 128, value_parser = crate::units::count::<u32>)]
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
    allow_negative_numbers = true,
    about = "Outbound UD SEND rate (ATC'16 rdma_bench): server threads send to client UD QPs"
)]
pub(crate) struct SenderArgs {
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
    allow_negative_numbers = true,
    about = "Inbound UD SEND rate (ATC'16 rdma_bench): client threads send to server UD QPs"
)]
pub(crate) struct ReceiverArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ud: UdArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bench {
    Sender,
    Receiver,
}

fn sender_main() -> Result<()> {
    run(Bench::Sender, &SenderArgs::parse().ud)
}

fn receiver_main() -> Result<()> {
    run(Bench::Receiver, &ReceiverArgs::parse().ud)
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &UdArgs, sending: bool) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    counts_at_least_one(&[("--num-clients", a.num_clients as u64), ("--size", a.size)])?;
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
    let ud = Ud { a, bench, sending };
    if sending {
        framework::run(&Sending(ud), &a.common)?;
    } else {
        framework::run(&Receiving(ud), &a.common)?;
    }
    Ok(())
}

/// What both sides of a UD run know.
#[derive(Clone, Copy)]
struct Ud<'a> {
    a: &'a UdArgs,
    bench: Bench,
    sending: bool,
}

impl Ud<'_> {
    fn plan(&self) -> Plan {
        let a = self.a;
        let info = RunInfo {
            bench: match self.bench {
                Bench::Sender => SENDER.name,
                Bench::Receiver => RECEIVER.name,
            },
            role: a.topo.role_name(),
            op: if self.sending { "SEND" } else { "RECV" },
            size: a.size,
            postlist: u64::from(a.postlist),
            first_id: a.topo.first_id(),
            json: a.common.json,
        };
        Plan::counting(info, a.topo.threads())
    }

    /// Thread `ctx`'s UD endpoint and registry name.
    fn endpoint(&self, ctx: &ThreadCtx<'_>) -> Result<(Endpoint, Arc<Registry>, String)> {
        let a = self.a;
        let spec = EndpointSpec {
            qp_type: QpType::Ud,
            queue_depth: a.queue.queue_depth,
            recv_depth: if self.sending { 1 } else { a.rq_depth },
            max_inline: a.queue.max_inline,
            buf_size: 4096,
            fill: fill_byte(self.sending, ctx.global_id),
            ex: false,
            access: None,
        };
        let port = ctx.open_port(port_index_for(&a.common, a.topo.dual_port, ctx.global_id))?;
        let label = format!("{}:{}", port.context().name(), port.num());
        check_ud_size(a.size, port.attr().active_mtu, &label)?;
        let ep = Endpoint::new(&port, spec, a.common.placement())?;
        let me = format!("{}-{}", a.topo.role_name().to_lowercase(), ctx.global_id);
        Ok((ep, a.common.registry()?, me))
    }
}

/// The sending side: each thread round-robins its SENDs over its receivers.
struct Sending<'a>(Ud<'a>);

/// A sending thread: its QP, the postlist over its receivers, and their liveness watches.
struct Sender {
    ep: Endpoint,
    reg: Arc<Registry>,
    me: String,
    batch: SendBatch,
    /// UD never reports a dead receiver: the report clock watches their registry entries.
    watches: Vec<PeerWatch>,
}

impl Role for Sending<'_> {
    type Thread = Sender;

    fn plan(&self) -> Plan {
        self.0.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Sender> {
        let (a, bench) = (self.0.a, self.0.bench);
        let (mut ep, reg, me) = self.0.endpoint(ctx)?;
        let peers: Vec<String> = match bench {
            Bench::Sender => (0..a.num_clients).map(|c| format!("client-{c}")).collect(),
            Bench::Receiver => vec![format!("server-{}", ctx.global_id % a.topo.threads())],
        };
        // Receivers watch our entry (UD tells them nothing when we die) and wait for our done
        // marker.
        reg.announce(&me, &ep.info())?;
        let mut dests = Vec::with_capacity(peers.len());
        let mut watches = Vec::with_capacity(peers.len());
        for p in &peers {
            let e = reg.find_ready(p, ctx.wait())?;
            check_ud_size(a.size, e.info.mtu, &format!("{p}'s port"))?;
            let ah = ep.ah_to(&e.info).map_err(|err| {
                Error::config(format!(
                    "cannot make an address handle to {p} (GID {}, from its registry entry): {err}",
                    e.info.gid()
                ))
            })?;
            dests.push((ah, e.info.qpn));
            watches.push(reg.watch(p, e.run_id, p));
        }
        let op = match bench {
            Bench::Receiver => Op::SendImm(IMM),
            Bench::Sender => Op::Send,
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
        Ok(Sender {
            ep,
            reg,
            me,
            batch,
            watches,
        })
    }

    fn measure(&self, s: &mut Sender, m: &mut Meter<'_>) -> Result<()> {
        let mut counter = self.0.a.queue.counter();
        let limit = self.0.a.common.op_limit();
        m.pump(s.ep.qp_mut(), &mut s.batch, &mut counter, limit)?;
        Ok(())
    }

    fn finish(&self, s: Sender, _: &ThreadCtx<'_>) -> Result<()> {
        drop(s.watches);
        publish_done(&s.reg, &s.me)
    }
}

/// The receiving side: each thread keeps RECVs posted and counts what arrives.
struct Receiving<'a>(Ud<'a>);

/// A receiving thread: its QP, its RECVs, and (ud-sender's clients) the sender's liveness.
struct Receiver {
    ep: Endpoint,
    reg: Arc<Registry>,
    me: String,
    recvs: RecvBatch,
    sender: SenderWatch,
    /// SENDs counted, and how many of them lacked the immediate.
    ops: u64,
    bad_imm: u64,
}

impl Role for Receiving<'_> {
    type Thread = Receiver;

    fn plan(&self) -> Plan {
        self.0.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Receiver> {
        let a = self.0.a;
        let (mut ep, reg, me) = self.0.endpoint(ctx)?;
        let len = (a.size as usize + GRH_BYTES) as u32;
        let info = ep.info();
        let (qp, mr) = ep.parts();
        // Every RECV lands in the same bytes: the rate, not the data, is measured (as the
        // original).
        let mut recvs = RecvBatch::new(qp, mr, a.rq_depth as usize, len, 0, 0)?;
        recvs.post(qp, a.rq_depth as usize)?;
        reg.announce(&me, &info)?;
        Ok(Receiver {
            ep,
            reg,
            me,
            recvs,
            sender: SenderWatch::default(),
            ops: 0,
            bad_imm: 0,
        })
    }

    fn measure(&self, r: &mut Receiver, m: &mut Meter<'_>) -> Result<()> {
        let bench = self.0.bench;
        let want = match bench {
            Bench::Receiver => self.0.a.postlist as usize,
            Bench::Sender => POLL_BATCH,
        };
        let mut wcs = vec![WorkCompletion::default(); want];
        let qp = r.ep.qp_mut();
        let cq = Arc::clone(qp.recv_cq());
        // A receiver's rate covers first to last arrival, not the quiet after senders stop.
        let mut lull = Lull::new();
        while m.checkpoint() {
            let n = cq.poll(&mut wcs)?;
            if n == 0 {
                // Senders announce when they finish; look now and then (by the clock, not by a
                // count of polls) so the poll loop stays tight.
                if lull.empty(m) && bench == Bench::Sender && r.sender.finished(&r.reg)? {
                    break;
                }
                continue;
            }
            lull.busy(m);
            for wc in &wcs[..n] {
                wc.result()?;
                if bench == Bench::Receiver && wc.imm_data() != Some(IMM) {
                    r.bad_imm += 1;
                }
            }
            r.recvs.post(qp, n)?;
            r.ops += n as u64;
            m.count(r.ops);
        }
        Ok(())
    }

    fn finish(&self, r: Receiver, _: &ThreadCtx<'_>) -> Result<()> {
        let (bench, verify) = (self.0.bench, self.0.a.common.verify);
        if r.bad_imm > 0 {
            return Err(Error::Verify(format!(
                "{} SENDs arrived without immediate {IMM}",
                r.bad_imm
            )));
        }
        if verify && bench == Bench::Receiver && r.ops == 0 {
            return Err(Error::Verify("no SEND arrived".into()));
        }
        if verify && bench == Bench::Receiver {
            println!("main: verify ok: {} SENDs carried immediate {IMM}", r.ops);
        }
        if r.sender.done && r.ops == 0 {
            return Err(Error::PeerLost {
                peer: SENDER_THREAD.into(),
                what: "it finished, but none of its SENDs arrived here".into(),
            });
        }
        // Peers that watch us see that we left on purpose.
        publish_done(&r.reg, &r.me)
    }
}

/// The ud-sender server thread whose end a receiving client waits for.
const SENDER_THREAD: &str = "server-0";

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
            if let Some(e) = reg.lookup_now(SENDER_THREAD)? {
                self.run = Some(e.run_id);
                self._watch = Some(reg.watch(SENDER_THREAD, e.run_id, SENDER_THREAD));
            }
        }
        self.done = match self.run {
            Some(run) => reg.is_ready(&format!("{SENDER_THREAD}-done"), Some(run))?,
            None => false,
        };
        Ok(self.done)
    }
}

/// Both sides count: senders their SENDs, receivers what arrived.
const ROLES: &[RoleSpec] = &[RoleSpec::SERVER, RoleSpec::CLIENT];

/// ud-sender.
pub static SENDER: Benchmark = Benchmark {
    name: "ud-sender",
    family: Family::Microbenchmark,
    roles: ROLES,
    reports: "server",
    op: "SEND",
    output: Output::Rate,
    suite: &["--size 32 --postlist 16"],
    command: SenderArgs::command,
    entry: sender_main,
};

/// ud-receiver.
pub static RECEIVER: Benchmark = Benchmark {
    name: "ud-receiver",
    family: Family::Microbenchmark,
    roles: ROLES,
    reports: "client",
    op: "SEND",
    output: Output::Rate,
    suite: &["--size 32 --postlist 16"],
    command: ReceiverArgs::command,
    entry: receiver_main,
};
