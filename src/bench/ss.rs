//! ss-sequencer (Spec-S0) and ss-echo: request and reply both over UD.
//!
//! Client `C` sends to server thread `C mod num-server-threads`, keeping `postlist` requests
//! outstanding. A server thread polls up to `postlist` requests, reposts their RECVs with one
//! `ibv_post_recv`, and answers the batch with one linked postlist, rotating over `num-ud-qps`
//! UD QPs; address handles are made on a client's first request and cached.
//!
//! ss-sequencer: requests are header-only SEND_WITH_IMMs (the immediate: the counter's upper 32
//! bits as the client last saw them); the server takes one fetch-and-add on the process's
//! counter for the whole batch and replies with SEND_WITH_IMM (the value's lower 32 bits), or a
//! full 8-byte SEND when the client's upper half is stale.
//! ss-echo: requests are `size`-byte SENDs; the server SENDs each payload back. Its clients work
//! in rounds as the original's: `postlist` requests out, then all their replies in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::time::Instant;

use clap::{CommandFactory, Parser};

use crate::control::{install_stop_signals, Attention};
use crate::error::{Error, Result};
use crate::framework::echo_payload::{self, Outstanding};
use crate::framework::seq_verify::{check_totals, report_client, SeqTracker};
use crate::framework::ud_rpc::{drain_timeout, settle, ClientSet, UdRpc, UdRpcSpec};
use crate::framework::{
    self, counts_at_least_one, publish_done, require, Benchmark, CommonArgs, Family, Lull, Meter,
    Output, Plan, QueueArgs, Role, RoleSpec, ThreadCtx, Topology,
};
use crate::hot::{DestId, Payload, GRH_BYTES};
use crate::registry::{PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::WorkCompletion;

/// Which of the two benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Spec-S0.
    Sequencer,
    /// UD SEND request, UD SEND reply.
    Echo,
}

/// ss-sequencer's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ss-sequencer",
    mut_arg("verify", |a| a.help("Check the sequence once the run ends: each client sees values increase per reply QP; the server checks that no value was handed out twice or lost (counts and a hash)")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Spec-S0, the paper's UD-only sequencer (ATC'16 rdma_bench): clients send header-only \
SEND_WITH_IMMs, server threads answer batches with one fetch-and-add and one doorbell"
)]
pub(crate) struct SequencerArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ss: Args,
}

/// ss-echo's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ss-echo",
    mut_arg("verify", |a| a.help("Check that every reply carries one of the client's outstanding requests back, byte for byte, each once")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    mut_arg("num_threads", |a| a.alias("num-client-threads").alias("num_client_threads")),
    mut_arg("num_ud_qps", |a| a.default_value("1")),
    mut_arg("rq_depth", |a| a.default_value("2048")),
    mut_arg("max_postlist", |a| a.default_value("64")),
    mut_arg("size", |a| a.default_value("32")),
    about = "The paper's UD SEND echo (ATC'16 rdma_bench): clients send SENDs, server threads send \
each payload back in batches"
)]
pub(crate) struct EchoArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ss: Args,
}

/// Flags of ss-sequencer and ss-echo.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Clients: requests kept outstanding. Servers: requests polled, and replies sent with one
    /// doorbell, at most
    #[arg(long, default_value_t = 16, value_parser = crate::units::count::<u32>)]
    pub postlist: u32,
    /// Request (and reply) bytes (ss-echo; ss-sequencer's requests are header-only)
    #[arg(long, default_value_t = 0, value_parser = crate::units::count::<u32>)]
    pub size: u32,
    /// RECVs each server thread keeps posted (HRD_Q_DEPTH for ss-sequencer, kHrdRQDepth for
    /// ss-echo)
    #[arg(long, alias = "rq_depth", default_value_t = 128, value_parser = crate::units::count::<u32>)]
    pub rq_depth: u32,
    /// Server threads (NUM_SERVER_THREADS); clients need it to pick their server
    #[arg(long, alias = "num_server_threads", default_value_t = 10, value_parser = crate::units::count::<usize>)]
    pub num_server_threads: usize,
    /// UD QPs each server thread replies over, round-robin per batch (NUM_UD_QPS)
    #[arg(long, alias = "num_ud_qps", default_value_t = 3, value_parser = crate::units::count::<usize>)]
    pub num_ud_qps: usize,
    /// Client threads the servers' RECV queues are sized for (MAX_NUM_CLIENTS)
    #[arg(long, alias = "max_num_clients", default_value_t = 70, value_parser = crate::units::count::<usize>)]
    pub max_num_clients: usize,
    /// 1: one doorbell per reply (DISABLE_SERVER_POSTLIST)
    #[arg(long, alias = "disable_server_postlist", default_value = "0", value_parser = crate::framework::flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub disable_server_postlist: bool,
    /// Largest postlist accepted (MAX_POSTLIST)
    #[arg(long, alias = "max_postlist", default_value_t = 128, value_parser = crate::units::count::<u32>)]
    pub max_postlist: u32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(kind: Kind, a: &Args) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    counts_at_least_one(&[
        ("--num-server-threads", a.num_server_threads as u64),
        ("--num-ud-qps", a.num_ud_qps as u64),
        ("--max-num-clients", a.max_num_clients as u64),
    ])?;
    a.queue.check(a.postlist, a.max_postlist)?;
    match kind {
        Kind::Sequencer => require(a.size == 0, || {
            "ss-sequencer's requests are header-only: --size is not a flag of it".into()
        })?,
        Kind::Echo => {
            require(a.size >= 1 && a.size as usize + GRH_BYTES <= 4096, || {
                format!(
                    "size {} must be between 1 and 4056 (a request and its 40-byte GRH fill at most 4096 bytes)",
                    a.size
                )
            })?;
            crate::framework::check_inline(u64::from(a.size), a.queue.max_inline, "SENDs")?;
            require(!a.common.verify || a.size >= 8, || {
                "--verify 1 needs --size 8 or more (each request carries an 8-byte tag)".into()
            })?;
        }
    }
    // Every client of a server thread keeps `postlist` requests outstanding; UD drops a request
    // that finds no RECV, so the server's RECV queue must hold them all.
    let per_server = a.max_num_clients.div_ceil(a.num_server_threads);
    let need = per_server as u64 * u64::from(a.postlist);
    require(need <= u64::from(a.rq_depth), || {
        format!(
            "the servers' RECV queue (rq-depth {}) is smaller than clients per server thread \
             ({per_server} = ceil(max-num-clients {} / num-server-threads {})) × postlist {}",
            a.rq_depth, a.max_num_clients, a.num_server_threads, a.postlist
        )
    })?;
    a.topo.check_roles(
        a.max_num_clients,
        "max-num-clients",
        "the server runs --num-server-threads threads",
    )?;
    Ok(())
}

fn sequencer_main() -> Result<()> {
    run(Kind::Sequencer, SequencerArgs::parse().ss)
}

fn echo_main() -> Result<()> {
    run(Kind::Echo, EchoArgs::parse().ss)
}

fn run(kind: Kind, a: Args) -> Result<()> {
    validate(kind, &a)?;
    let reg = a.common.registry()?;
    let ss = Ss { kind, a: &a, reg };
    if a.topo.is_client {
        framework::run(&Clients(ss), &a.common)?;
        return Ok(());
    }
    let servers = Servers {
        ss,
        counter: AtomicU64::new(0),
    };
    framework::run(&servers, &a.common)?;
    if kind == Kind::Sequencer && a.common.verify {
        servers.verify_totals(install_stop_signals()?)?;
    }
    Ok(())
}

/// What both sides of a run know.
struct Ss<'a> {
    kind: Kind,
    a: &'a Args,
    reg: Arc<Registry>,
}

impl Ss<'_> {
    fn plan(&self) -> Plan {
        let a = self.a;
        let threads = if a.topo.is_client {
            a.topo.threads()
        } else {
            a.num_server_threads
        };
        let info = RunInfo {
            bench: match self.kind {
                Kind::Sequencer => SEQUENCER.name,
                Kind::Echo => ECHO.name,
            },
            role: a.topo.role_name(),
            op: "SEND",
            size: u64::from(a.size),
            postlist: u64::from(a.postlist),
            first_id: a.topo.first_id(),
            json: a.common.json,
        };
        Plan::counting(info, threads)
    }

    fn port_for(&self, ctx: &ThreadCtx<'_>, server: usize) -> Result<crate::verbs::Port> {
        let a = self.a;
        ctx.open_port(a.common.port_index + if a.topo.dual_port { server % 2 } else { 0 })
    }
}

/// The server threads: poll a batch of requests, answer it with one doorbell.
struct Servers<'a> {
    ss: Ss<'a>,
    /// ss-sequencer's counter, shared by the server threads.
    counter: AtomicU64,
}

/// A server thread's UD QPs and the clients it answers.
struct Server {
    rpc: UdRpc,
    me: String,
    clients: ClientSet,
}

impl Servers<'_> {
    /// `--verify 1` on the sequencer's server, once every thread is done: the values handed out
    /// against what the clients received.
    fn verify_totals(&self, attention: Attention) -> Result<()> {
        let (a, reg) = (self.ss.a, &self.ss.reg);
        if attention.stopped_by_signal() {
            println!("main: verify skipped: stopped by a signal before every client could report");
            return Ok(());
        }
        let names: Vec<String> = (0..a.max_num_clients)
            .map(|c| format!("client-{c}"))
            .collect();
        let present = ClientSet::new(names).present(reg)?;
        let line = check_totals(
            reg,
            &present,
            &[reg.run_id()],
            self.counter.load(Ordering::Acquire),
            std::time::Duration::from_secs(10),
        )?;
        println!("{line}");
        Ok(())
    }
}

impl Role for Servers<'_> {
    type Thread = Server;

    fn plan(&self) -> Plan {
        self.ss.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Server> {
        let (a, t) = (self.ss.a, ctx.t);
        let port = self.ss.port_for(ctx, t)?;
        let size = a.size as usize;
        let spec = UdRpcSpec {
            qps: a.num_ud_qps,
            queue_depth: a.queue.queue_depth,
            recv_slots: a.rq_depth as usize,
            recv_payload: size,
            max_postlist: a.postlist as usize,
            send_payload: size.max(8),
            max_inline: a.queue.max_inline,
        };
        let mut rpc = UdRpc::new(ctx, &port, spec, &a.queue)?;
        rpc.fill()?;
        let me = format!("server-{t}");
        self.ss.reg.announce(&me, &rpc.info())?;
        let clients = ClientSet::new(
            (t..a.max_num_clients)
                .step_by(a.num_server_threads)
                .map(|c| format!("client-{c}"))
                .collect(),
        );
        Ok(Server { rpc, me, clients })
    }

    fn measure(&self, s: &mut Server, m: &mut Meter<'_>) -> Result<()> {
        let (kind, a, reg) = (self.ss.kind, self.ss.a, &self.ss.reg);
        let rpc = &mut s.rpc;
        let mut wcs = vec![WorkCompletion::default(); a.postlist as usize];
        let mut body = vec![0u8; a.size as usize];
        let mut ops = 0u64;
        let mut lull = Lull::new();
        while m.checkpoint() && ops < a.common.op_limit() {
            let n = rpc.recv_cq.poll(&mut wcs)?;
            if n == 0 {
                if lull.empty(m) && lull.started() && s.clients.all_done(reg)? {
                    break;
                }
                continue;
            }
            lull.busy(m);
            let base = match kind {
                Kind::Sequencer => self.counter.fetch_add(n as u64, Ordering::Relaxed),
                Kind::Echo => 0,
            };
            for (i, wc) in wcs[..n].iter().enumerate() {
                wc.result()?;
                let dest = rpc
                    .out
                    .dest_of(wc, &rpc.recv_mr, rpc.ring.slot_offset(wc.wr_id()))?;
                match kind {
                    Kind::Sequencer => {
                        let v = base + i as u64;
                        // The client guessed the upper half right: the immediate alone carries it.
                        if wc.imm_data() == Some((v >> 32) as u32) {
                            rpc.out
                                .push(dest, wc.src_qp(), Some(v as u32), Payload::None)?;
                        } else {
                            rpc.out.push(dest, wc.src_qp(), None, Payload::U64(v))?;
                        }
                    }
                    Kind::Echo => {
                        rpc.recv_mr.read(rpc.payload_offset(wc), &mut body);
                        rpc.out
                            .push(dest, wc.src_qp(), None, Payload::Bytes(&body))?;
                    }
                }
                if a.disable_server_postlist {
                    rpc.out.flush()?;
                }
            }
            rpc.repost(&wcs[..n])?;
            rpc.out.flush()?;
            ops += n as u64;
            m.count(ops);
        }
        m.stop();
        rpc.out.drain()
    }

    fn finish(&self, s: Server, ctx: &ThreadCtx<'_>) -> Result<()> {
        println!(
            "main: Server {}: average postlist = {:.2}",
            ctx.t,
            s.rpc.out.average_postlist()
        );
        publish_done(&self.ss.reg, &s.me)
    }
}

/// Request-to-reply latency as the original's clients measure it: replies are anonymous, so
/// each is matched to the oldest outstanding request (FIFO; the sum, hence the average, does not
/// depend on the matching). One monotonic clock read per doorbell and one per poll, not per
/// request; not the TSC, whose value may differ between the CPUs a thread migrates across.
struct Latency {
    epoch: Instant,
    /// Send times (ns since `epoch`) of the outstanding requests, oldest first (a ring of
    /// `window` entries).
    sent: Vec<u64>,
    head: usize,
    len: usize,
    total_ns: u64,
    samples: u64,
}

impl Latency {
    fn new(window: usize) -> Self {
        Latency {
            epoch: Instant::now(),
            sent: vec![0; window],
            head: 0,
            len: 0,
            total_ns: 0,
            samples: 0,
        }
    }
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
    /// `k` requests went out at `now` (read before the doorbell: on Soft-RoCE the post itself
    /// may carry a request all the way to the server and back).
    #[inline]
    fn sent(&mut self, k: usize, now: u64) {
        let n = self.sent.len();
        for _ in 0..k.min(n - self.len) {
            self.sent[(self.head + self.len) % n] = now;
            self.len += 1;
        }
    }
    /// `k` replies came in now.
    #[inline]
    fn answered(&mut self, k: usize) {
        let now = self.now();
        let n = self.sent.len();
        for _ in 0..k.min(self.len) {
            self.total_ns += now.saturating_sub(self.sent[self.head]);
            self.head = (self.head + 1) % n;
            self.len -= 1;
            self.samples += 1;
        }
    }
    /// Average in microseconds.
    fn average_us(&self) -> f64 {
        if self.samples == 0 {
            return 0.0;
        }
        self.total_ns as f64 / self.samples as f64 / 1e3
    }
}

/// What a client checks in the replies it takes.
struct Replies {
    kind: Kind,
    verify: bool,
    /// ss-sequencer: the upper 32 bits of the counter as last seen (Spec-S0's guess).
    hi: u64,
    seq: SeqTracker,
    out: Outstanding,
    bad: Option<String>,
    body: Vec<u8>,
}

impl Replies {
    #[inline(always)]
    fn take(&mut self, rpc: &UdRpc, wc: &WorkCompletion) {
        match self.kind {
            Kind::Sequencer => {
                // The immediate under the upper half last seen, or (the server found that guess
                // stale) the full 8-byte SEND, which also updates the guess.
                let v = match wc.imm_data() {
                    Some(lo) => self.hi | u64::from(lo),
                    None => {
                        let v = rpc.recv_mr.load_u64(rpc.payload_offset(wc));
                        self.hi = v & !0xffff_ffff;
                        v
                    }
                };
                if self.verify {
                    self.seq.record(wc.src_qp(), v);
                }
            }
            Kind::Echo if self.verify => {
                rpc.recv_mr.read(rpc.payload_offset(wc), &mut self.body);
                let tag = echo_payload::tag_in(&self.body);
                if !tag.is_some_and(|t| self.out.answer(t)) && self.bad.is_none() {
                    self.bad = Some(format!(
                        "a reply did not carry an outstanding request back (bytes {:02x?})",
                        &self.body[..self.body.len().min(16)]
                    ));
                }
            }
            Kind::Echo => {}
        }
    }
}

/// The client threads: keep `postlist` requests out to their server thread.
struct Clients<'a>(Ss<'a>);

/// A client thread: its UD QP, its server's address, and what it checks in the replies.
struct Client {
    id: usize,
    me: String,
    rpc: UdRpc,
    dest: DestId,
    qpn: u32,
    server_run: u64,
    _watch: PeerWatch,
    replies: Replies,
    /// The request payload (ss-echo), rewritten per request with its tag.
    body: Vec<u8>,
    /// Echo requests sent (each carries its number in its tag).
    sent: u64,
    latency: Latency,
    /// Requests still out when the window closed.
    outstanding: usize,
}

impl Client {
    /// Stages `k` requests and posts them with one doorbell.
    fn send(&mut self, k: usize) -> Result<()> {
        for _ in 0..k {
            match self.replies.kind {
                Kind::Sequencer => {
                    let guess = (self.replies.hi >> 32) as u32;
                    self.rpc
                        .out
                        .push(self.dest, self.qpn, Some(guess), Payload::None)?;
                }
                Kind::Echo => {
                    self.sent += 1;
                    let tag = echo_payload::tag(self.id, self.sent);
                    echo_payload::fill(&mut self.body, tag);
                    if self.replies.verify {
                        self.replies.out.add(tag);
                    }
                    self.rpc
                        .out
                        .push(self.dest, self.qpn, None, Payload::Bytes(&self.body))?;
                }
            }
        }
        self.rpc.out.flush().map(drop)
    }

    /// Sends `k` requests, timed for the latency average.
    fn send_timed(&mut self, k: usize) -> Result<()> {
        let now = self.latency.now();
        self.send(k)?;
        self.latency.sent(k, now);
        Ok(())
    }
}

impl Role for Clients<'_> {
    type Thread = Client;

    fn plan(&self) -> Plan {
        self.0.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Client> {
        let (kind, a, reg) = (self.0.kind, self.0.a, &self.0.reg);
        let id = ctx.global_id;
        let server = id % a.num_server_threads;
        let port = self.0.port_for(ctx, server)?;
        let window = a.postlist as usize;
        let size = a.size as usize;
        let spec = UdRpcSpec {
            qps: 1,
            queue_depth: a.queue.queue_depth,
            recv_slots: window,
            recv_payload: size.max(8),
            max_postlist: window,
            send_payload: size,
            max_inline: a.queue.max_inline,
        };
        let mut rpc = UdRpc::new(ctx, &port, spec, &a.queue)?;
        rpc.fill()?;
        let me = format!("client-{id}");
        let peer = format!("server-{server}");
        reg.announce(&me, &rpc.info())?;
        let remote = reg.find_ready(&peer, ctx.wait())?;
        let watch = reg.watch(&peer, remote.run_id, &peer);
        let dest = rpc.dest_to(&remote.info)?;
        Ok(Client {
            id,
            me,
            rpc,
            dest,
            qpn: remote.info.qpn,
            server_run: remote.run_id,
            _watch: watch,
            replies: Replies {
                kind,
                verify: a.common.verify,
                hi: 0,
                seq: SeqTracker::default(),
                out: Outstanding::new(window),
                bad: None,
                body: vec![0; size],
            },
            body: vec![0u8; size],
            sent: 0,
            latency: Latency::new(window),
            outstanding: 0,
        })
    }

    fn measure(&self, c: &mut Client, m: &mut Meter<'_>) -> Result<()> {
        let (kind, a) = (self.0.kind, self.0.a);
        let window = a.postlist as usize;
        c.send_timed(window)?;
        m.start();
        let mut wcs = vec![WorkCompletion::default(); window];
        let (mut ops, mut round) = (0u64, 0usize);
        let limit = a.common.op_limit();
        while m.checkpoint() && ops < limit {
            let n = c.rpc.recv_cq.poll(&mut wcs)?;
            if n == 0 {
                continue;
            }
            c.latency.answered(n);
            for wc in &wcs[..n] {
                wc.result()?;
                c.replies.take(&c.rpc, wc);
            }
            c.rpc.repost(&wcs[..n])?;
            ops += n as u64;
            m.count(ops);
            // The sequencer refills its window at once; the echo client waits for the whole
            // round.
            match kind {
                Kind::Sequencer => c.send_timed(n)?,
                Kind::Echo => {
                    round += n;
                    if round == window {
                        round = 0;
                        c.send_timed(window)?;
                    }
                }
            }
        }
        // The replies to the requests still out: the server answers every request it received.
        c.outstanding = match kind {
            Kind::Sequencer => window,
            Kind::Echo => window - round,
        };
        Ok(())
    }

    fn finish(&self, mut c: Client, ctx: &ThreadCtx<'_>) -> Result<()> {
        let (kind, a, reg) = (self.0.kind, self.0.a, &self.0.reg);
        println!(
            "main: Client {}: average latency = {:.2} us",
            c.id,
            c.latency.average_us()
        );
        let replies = &mut c.replies;
        let drained =
            c.rpc
                .drain_replies(c.outstanding, drain_timeout(ctx.attention), |rpc, wc| {
                    replies.take(rpc, wc);
                    Ok(())
                });
        if !settle(drained, &c.me, ctx.attention)? {
            return publish_done(reg, &c.me);
        }
        c.rpc.out.drain()?;
        if a.common.verify {
            if let Some(bad) = &c.replies.bad {
                return Err(Error::Verify(format!("{}: {bad}", c.me)));
            }
            match kind {
                Kind::Sequencer => {
                    report_client(reg, &c.me, c.id, &c.replies.seq, c.server_run)?;
                }
                Kind::Echo => println!(
                    "main: Client {}: verify ok: {} replies, each carrying its request's payload back",
                    c.id, c.sent
                ),
            }
        }
        publish_done(reg, &c.me)
    }
}

/// Both sides count: the servers the requests they answer, the clients their replies.
const ROLES: &[RoleSpec] = &[RoleSpec::SERVER.outliving().own_threads(), RoleSpec::CLIENT];

/// ss-sequencer.
pub static SEQUENCER: Benchmark = Benchmark {
    name: "ss-sequencer",
    family: Family::Application,
    roles: ROLES,
    reports: "server",
    op: "SEND",
    output: Output::Rate,
    suite: &[
        "--num-server-threads 1 --max-num-clients 1 --postlist 16",
        "--num-server-threads 1 --max-num-clients 1 --postlist 16 --disable-server-postlist 1",
        "--num-server-threads 1 --max-num-clients 1 --postlist 1",
    ],
    command: SequencerArgs::command,
    entry: sequencer_main,
};

/// ss-echo.
pub static ECHO: Benchmark = Benchmark {
    name: "ss-echo",
    family: Family::Application,
    roles: ROLES,
    reports: "server",
    op: "SEND",
    output: Output::Rate,
    suite: &["--num-server-threads 1 --max-num-clients 1 --postlist 16 --size 32"],
    command: EchoArgs::command,
    entry: echo_main,
};
