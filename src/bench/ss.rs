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

use clap::Parser;

use super::common::{all_connected, require, CommonArgs, Lull, QueueArgs, Topology};
use super::echo_payload::{self, Outstanding};
use super::endpoint::publish_done;
use super::runner::{run_threads, Role};
use super::seq_verify::{check_totals, report_client, SeqTracker};
use super::ud_rpc::{drain_timeout, settle, ClientSet, UdRpc, UdRpcSpec};
use crate::control::{stop_requested, stopped_by_signal};
use crate::error::{Error, Result};
use crate::hot::{Payload, GRH_BYTES};
use crate::registry::Registry;
use crate::stats::{Counters, RunInfo};
use crate::verbs::WorkCompletion;
use std::time::Instant;

/// Which of the two benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Spec-S0.
    Sequencer,
    /// UD SEND request, UD SEND reply.
    Echo,
}

/// ss-sequencer's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ss-sequencer",
    version,
    args_override_self = true,
    about = "Spec-S0, the paper's UD-only sequencer (ATC'16 rdma_bench): clients send header-only \
SEND_WITH_IMMs, server threads answer batches with one fetch-and-add and one doorbell"
)]
pub struct SequencerArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ss: Args,
}

/// ss-echo's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ss-echo",
    version,
    args_override_self = true,
    mut_arg("num_threads", |a| a.alias("num-client-threads").alias("num_client_threads")),
    mut_arg("num_ud_qps", |a| a.default_value("1")),
    mut_arg("rq_depth", |a| a.default_value("2048")),
    mut_arg("max_postlist", |a| a.default_value("64")),
    mut_arg("size", |a| a.default_value("32")),
    about = "The paper's UD SEND echo (ATC'16 rdma_bench): clients send SENDs, server threads send \
each payload back in batches"
)]
pub struct EchoArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ss: Args,
}

/// Flags of ss-sequencer and ss-echo.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Clients: requests kept outstanding. Servers: requests polled, and replies sent with one
    /// doorbell, at most
    #[arg(long, default_value_t = 16)]
    pub postlist: u32,
    /// Request (and reply) bytes (ss-echo; ss-sequencer's requests are header-only)
    #[arg(long, default_value_t = 0)]
    pub size: u32,
    /// RECVs each server thread keeps posted (HRD_Q_DEPTH for ss-sequencer, kHrdRQDepth for
    /// ss-echo)
    #[arg(long, alias = "rq_depth", default_value_t = 128)]
    pub rq_depth: u32,
    /// Server threads (NUM_SERVER_THREADS); clients need it to pick their server
    #[arg(long, alias = "num_server_threads", default_value_t = 10)]
    pub num_server_threads: usize,
    /// UD QPs each server thread replies over, round-robin per batch (NUM_UD_QPS)
    #[arg(long, alias = "num_ud_qps", default_value_t = 3)]
    pub num_ud_qps: usize,
    /// Client threads the servers' RECV queues are sized for (MAX_NUM_CLIENTS)
    #[arg(long, alias = "max_num_clients", default_value_t = 70)]
    pub max_num_clients: usize,
    /// 1: one doorbell per reply (DISABLE_SERVER_POSTLIST)
    #[arg(long, alias = "disable_server_postlist", default_value = "0", value_parser = super::common::flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub disable_server_postlist: bool,
    /// Largest postlist accepted (MAX_POSTLIST)
    #[arg(long, alias = "max_postlist", default_value_t = 128)]
    pub max_postlist: u32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub fn validate(kind: Kind, a: &Args) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    require(a.num_server_threads >= 1, || {
        "num-server-threads must be at least 1".into()
    })?;
    require(a.num_ud_qps >= 1, || "num-ud-qps must be at least 1".into())?;
    require(a.max_num_clients >= 1, || {
        "max-num-clients must be at least 1".into()
    })?;
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
            super::common::check_inline(u64::from(a.size), a.queue.max_inline, "SENDs")?;
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

/// Runs ss-sequencer.
pub fn run_sequencer(a: SequencerArgs) -> Result<()> {
    run(Kind::Sequencer, a.ss)
}

/// Runs ss-echo.
pub fn run_echo(a: EchoArgs) -> Result<()> {
    run(Kind::Echo, a.ss)
}

fn run(kind: Kind, a: Args) -> Result<()> {
    validate(kind, &a)?;
    let threads = if a.topo.is_client {
        a.topo.threads()
    } else {
        a.num_server_threads
    };
    let first_id = a.topo.first_id();
    let info = RunInfo {
        bench: match kind {
            Kind::Sequencer => "ss-sequencer",
            Kind::Echo => "ss-echo",
        },
        role: a.topo.role_name(),
        op: "SEND",
        size: u64::from(a.size),
        postlist: u64::from(a.postlist),
        first_id,
        json: a.common.json,
    };
    let reg = a.common.registry()?;
    println!("main: Using {threads} threads");
    let counter = AtomicU64::new(0);
    run_threads(info, Role::Counting, threads, &a.common, |t, counters| {
        if a.topo.is_client {
            client(kind, &a, &reg, first_id + t, t, counters)
        } else {
            server(kind, &a, &reg, &counter, t, counters)
        }
    })?;
    if kind == Kind::Sequencer && !a.topo.is_client && a.common.verify && stopped_by_signal() {
        println!("main: verify skipped: stopped by a signal before every client could report");
    } else if kind == Kind::Sequencer && !a.topo.is_client && a.common.verify {
        let names: Vec<String> = (0..a.max_num_clients)
            .map(|c| format!("client-{c}"))
            .collect();
        let present = ClientSet::new(names).present(&reg)?;
        let line = check_totals(
            &reg,
            &present,
            &[reg.run_id()],
            counter.load(Ordering::Acquire),
            std::time::Duration::from_secs(10),
        )?;
        println!("{line}");
    }
    Ok(())
}

fn port_for(a: &Args, server: usize) -> Result<crate::verbs::Port> {
    a.common
        .open_port(a.common.port_index + if a.topo.dual_port { server % 2 } else { 0 })
}

fn server(
    kind: Kind,
    a: &Args,
    reg: &Arc<Registry>,
    seq: &AtomicU64,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let port = port_for(a, t)?;
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
    let mut rpc = UdRpc::new(&port, spec, a.common.placement(), a.queue.counter())?;
    rpc.fill()?;
    let me = format!("server-{t}");
    reg.announce(&me, &rpc.info())?;
    let mut clients = ClientSet::new(
        (t..a.max_num_clients)
            .step_by(a.num_server_threads)
            .map(|c| format!("client-{c}"))
            .collect(),
    );
    let mut wcs = vec![WorkCompletion::default(); a.postlist as usize];
    let mut body = vec![0u8; size];
    let mut ops = 0u64;
    let mut lull = Lull::new(t);
    while !stop_requested() && ops < a.common.op_limit() {
        let n = rpc.recv_cq.poll(&mut wcs)?;
        if n == 0 {
            if lull.empty(counters) && lull.started() && clients.all_done(reg)? {
                break;
            }
            continue;
        }
        lull.busy(counters);
        let base = match kind {
            Kind::Sequencer => seq.fetch_add(n as u64, Ordering::Relaxed),
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
        counters.set(t, ops);
    }
    lull.end(counters);
    rpc.out.drain()?;
    println!(
        "main: Server {t}: average postlist = {:.2}",
        rpc.out.average_postlist()
    );
    publish_done(reg, &me)
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

fn client(
    kind: Kind,
    a: &Args,
    reg: &Arc<Registry>,
    id: usize,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let server = id % a.num_server_threads;
    let port = port_for(a, server)?;
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
    let mut rpc = UdRpc::new(&port, spec, a.common.placement(), a.queue.counter())?;
    rpc.fill()?;
    let me = format!("client-{id}");
    let peer = format!("server-{server}");
    reg.announce(&me, &rpc.info())?;
    let remote = reg.find_ready(&peer, a.common.wait())?;
    let _watch = reg.watch(&peer, remote.run_id, &peer);
    let dest = rpc.dest_to(&remote.info)?;
    let qpn = remote.info.qpn;
    let mut replies = Replies {
        kind,
        verify: a.common.verify,
        hi: 0,
        seq: SeqTracker::default(),
        out: Outstanding::new(window),
        bad: None,
        body: vec![0; size],
    };
    let mut body = vec![0u8; size];
    let mut sent = 0u64;
    // Stages `k` requests and posts them with one doorbell.
    let mut send = |rpc: &mut UdRpc, replies: &mut Replies, k: usize| -> Result<()> {
        for _ in 0..k {
            match kind {
                Kind::Sequencer => {
                    let guess = (replies.hi >> 32) as u32;
                    rpc.out.push(dest, qpn, Some(guess), Payload::None)?;
                }
                Kind::Echo => {
                    sent += 1;
                    let tag = echo_payload::tag(id, sent);
                    echo_payload::fill(&mut body, tag);
                    if replies.verify {
                        replies.out.add(tag);
                    }
                    rpc.out.push(dest, qpn, None, Payload::Bytes(&body))?;
                }
            }
        }
        rpc.out.flush()?;
        Ok(())
    };
    all_connected(counters)?;
    let mut latency = Latency::new(window);
    let now = latency.now();
    send(&mut rpc, &mut replies, window)?;
    latency.sent(window, now);
    counters.start(t);
    let mut wcs = vec![WorkCompletion::default(); window];
    let (mut ops, mut round) = (0u64, 0usize);
    let limit = a.common.op_limit();
    while !stop_requested() && ops < limit {
        let n = rpc.recv_cq.poll(&mut wcs)?;
        if n == 0 {
            continue;
        }
        latency.answered(n);
        for wc in &wcs[..n] {
            wc.result()?;
            replies.take(&rpc, wc);
        }
        rpc.repost(&wcs[..n])?;
        ops += n as u64;
        counters.set(t, ops);
        // The sequencer refills its window at once; the echo client waits for the whole round.
        match kind {
            Kind::Sequencer => {
                let now = latency.now();
                send(&mut rpc, &mut replies, n)?;
                latency.sent(n, now);
            }
            Kind::Echo => {
                round += n;
                if round == window {
                    round = 0;
                    let now = latency.now();
                    send(&mut rpc, &mut replies, window)?;
                    latency.sent(window, now);
                }
            }
        }
    }
    counters.stop(t);
    println!(
        "main: Client {id}: average latency = {:.2} us",
        latency.average_us()
    );
    // The replies to the requests still out: the server answers every request it received.
    let out = match kind {
        Kind::Sequencer => window,
        Kind::Echo => window - round,
    };
    let drained = rpc.drain_replies(out, drain_timeout(), |rpc, wc| {
        replies.take(rpc, wc);
        Ok(())
    });
    if !settle(drained, &me)? {
        return publish_done(reg, &me);
    }
    rpc.out.drain()?;
    if a.common.verify {
        if let Some(bad) = &replies.bad {
            return Err(Error::Verify(format!("{me}: {bad}")));
        }
        match kind {
            Kind::Sequencer => {
                report_client(reg, &me, id, &replies.seq, remote.run_id)?;
            }
            Kind::Echo => println!(
                "main: Client {id}: verify ok: {sent} replies, each carrying its request's payload back"
            ),
        }
    }
    publish_done(reg, &me)
}
