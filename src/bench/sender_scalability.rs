//! sender-scalability: how the outbound rate of one thread scales with the number of QPs it drives.
//! Each server thread connects one RC/UC QP to each of `num-clients` client QPs and posts single
//! READs/WRITEs to a client picked at random per operation, with selective signaling per QP
//! (unsig batch 4, as the original). Clients are passive targets.

use clap::Parser;

use super::common::{
    check_inline, fill_byte, flag01, parse_reap, port_index_for, require, slot_stride, CommonArgs,
    REAP_HELP,
};
use super::connected::finish_active;
use super::endpoint::{connect_through, idle_until_peer_done, Endpoint, EndpointSpec};
use super::runner::{run_threads, Role};
use crate::error::{Error, Result};
use crate::hot::{
    check_batching, stop_requested, Op, PollTimeout, Reap, Remote, SendBatch, SendSpec,
    UnsignaledCounter,
};
use crate::mem::HugeBuffer;
use crate::registry::Registry;
use crate::stats::{Counters, RunInfo};
use crate::verbs::{
    Access, CompletionQueue, MemoryRegion, Port, ProtectionDomain, QpCaps, QpType, QueuePair,
};

/// sender-scalability's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "sender-scalability",
    version,
    args_override_self = true,
    about = "Outbound rate vs number of QPs (ATC'16 rdma_bench): one thread drives many client QPs"
)]
pub struct Args {
    /// Server: server threads [default: 1]. Client: client threads in this process, one per
    /// client QP [default: num-clients, i.e. every client on this machine]
    #[arg(long, alias = "num_threads")]
    pub num_threads: Option<usize>,
    /// Client QPs in the whole run (kAppNumClients); client gids are machine-id × num-threads + t
    #[arg(long, alias = "num_clients", default_value_t = 16)]
    pub num_clients: usize,
    /// Clients: server threads to connect to (the server's --num-threads)
    #[arg(long, alias = "num_servers", default_value_t = 1)]
    pub num_servers: usize,
    /// 1: alternate threads between two ports
    #[arg(long, alias = "dual_port", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub dual_port: bool,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// 1: this process runs the (passive) client threads
    #[arg(long, alias = "is_client", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub is_client: bool,
    /// Client machine index
    #[arg(long, alias = "machine_id", default_value_t = 0)]
    pub machine_id: usize,
    /// Bytes per READ/WRITE
    #[arg(long, default_value_t = 32)]
    pub size: u64,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    /// One signaled WR every N, per QP
    #[arg(long, alias = "unsig_batch", default_value_t = 4)]
    pub unsig_batch: u32,
    /// Send queue depth per QP
    #[arg(long, alias = "queue_depth", default_value_t = 128)]
    pub queue_depth: u32,
    /// When send completions are reaped (the text is REAP_HELP).
    #[arg(long, default_value = "eager", value_parser = parse_reap, value_name = "eager|lazy", help = REAP_HELP)]
    pub reap: Reap,
    /// Inline limit requested from the QPs
    #[arg(long, alias = "max_inline", default_value_t = 60)]
    pub max_inline: u32,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 2 * 1024 * 1024)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

impl Args {
    /// Threads of this process.
    pub fn threads(&self) -> usize {
        self.num_threads
            .unwrap_or(if self.is_client { self.num_clients } else { 1 })
    }
}

/// The checks that refuse a run before anything is made.
pub fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    require(a.threads() >= 1, || "num-threads must be at least 1".into())?;
    require(a.num_clients >= 1, || {
        "num-clients must be at least 1".into()
    })?;
    require(a.num_servers >= 1, || {
        "num-servers must be at least 1".into()
    })?;
    require(a.size >= 1, || "size must be at least 1 byte".into())?;
    require(!(a.use_uc && a.do_read), || {
        "UC cannot do READs (--use-uc 1 needs --do-read 0)".into()
    })?;
    check_batching(1, a.unsig_batch, a.queue_depth, 1).map_err(Error::Config)?;
    if !a.do_read {
        check_inline(a.size, a.max_inline, "WRITEs")?;
    }
    let need = a.num_clients * slot_stride(a.size);
    require(need <= a.buf_size, || {
        format!(
            "num-clients × round_up(size, 64) = {need} bytes does not fit the {}-byte buffer",
            a.buf_size
        )
    })?;
    if a.is_client {
        let last = (a.machine_id + 1) * a.threads();
        require(last <= a.num_clients, || {
            format!("client gids up to {} exceed num-clients ({}): check --machine-id and --num-threads", last - 1, a.num_clients)
        })?;
    }
    Ok(())
}

/// Runs sender-scalability.
pub fn run(a: Args) -> Result<()> {
    validate(&a)?;
    let threads = a.threads();
    let first_id = if a.is_client {
        a.machine_id * threads
    } else {
        0
    };
    let info = RunInfo {
        bench: "sender-scalability",
        role: if a.is_client { "Client" } else { "Server" },
        op: if a.do_read { "READ" } else { "WRITE" },
        size: a.size,
        postlist: 1,
        first_id,
        json: a.common.json,
    };
    println!("main: Using {threads} threads");
    let role = if a.is_client {
        Role::Passive
    } else {
        Role::Counting
    };
    run_threads(info, role, threads, &a.common, |t, counters| {
        if a.is_client {
            client(&a, first_id + t)
        } else {
            server(&a, t, counters)
        }
    })?;
    Ok(())
}

fn client(a: &Args, gid: usize) -> Result<()> {
    let reg = Registry::connect(a.common.registry.as_deref())?;
    let mut eps = Vec::with_capacity(a.num_servers);
    for s in 0..a.num_servers {
        let spec = EndpointSpec {
            qp_type: if a.use_uc { QpType::Uc } else { QpType::Rc },
            queue_depth: a.queue_depth,
            recv_depth: 1,
            max_inline: a.max_inline,
            buf_size: a.buf_size,
            fill: fill_byte(false, gid),
            ex: false,
        };
        let ep = Endpoint::new(&a.common, port_index_for(&a.common, a.dual_port, gid), spec)?;
        let remote = connect_through(
            &reg,
            &ep.qp,
            Some(&ep.mr),
            &format!("client-{gid}-{s}"),
            &format!("server-{s}-{gid}"),
            &a.common,
        )?;
        eps.push((ep, remote.run_id));
    }
    println!(
        "main: Client {gid} connected to {} server thread(s)",
        a.num_servers
    );
    for (s, (_, run)) in eps.iter().enumerate() {
        idle_until_peer_done(&reg, &format!("server-{s}"), *run)?;
    }
    Ok(())
}

fn server(a: &Args, t: usize, counters: &Counters) -> Result<()> {
    let port = Port::open_by(
        a.common.device.as_deref(),
        port_index_for(&a.common, a.dual_port, t),
        a.common.gid_index,
    )?;
    let pd = ProtectionDomain::new(port.context())?;
    let mut buf = HugeBuffer::new(a.buf_size, a.common.placement())?;
    // SAFETY: nothing is registered yet.
    unsafe { buf.as_mut_slice().fill(fill_byte(true, t)) };
    // SAFETY: `buf` outlives `mr`: both are locals and `mr` is declared after, so dropped first;
    // the QPs that use it are dropped before `mr` too (declared later still).
    let mr = unsafe { MemoryRegion::register(&pd, buf.as_ptr(), buf.len(), Access::LOCAL_WRITE)? };
    let reg = Registry::connect(a.common.registry.as_deref())?;
    let caps = QpCaps {
        max_send_wr: a.queue_depth,
        max_recv_wr: 1,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: a.max_inline,
    };
    // One QP per client, each with its own CQ (as libhrd makes them), sharing one PD and MR.
    let mut qps = Vec::with_capacity(a.num_clients);
    let mut remotes = Vec::with_capacity(a.num_clients);
    for c in 0..a.num_clients {
        let cq = CompletionQueue::new(port.context(), a.queue_depth)?;
        let qp = QueuePair::new(
            &pd,
            &port,
            &cq,
            &cq,
            if a.use_uc { QpType::Uc } else { QpType::Rc },
            caps,
        )?;
        let remote = connect_through(
            &reg,
            &qp,
            None,
            &format!("server-{t}-{c}"),
            &format!("client-{c}-{t}"),
            &a.common,
        )?;
        remotes.push(remote.info);
        qps.push(qp);
    }
    println!("main: Server {t} connected to {} client QPs", a.num_clients);

    let stride = slot_stride(a.size);
    let mut batches = Vec::with_capacity(a.num_clients);
    for (c, (qp, remote)) in qps.iter().zip(&remotes).enumerate() {
        let spec = SendSpec {
            op: if a.do_read { Op::Read } else { Op::Write },
            postlist: 1,
            size: a.size as u32,
            stride,
            local_offset: c * stride,
            remote_offset: (c * stride) as u64,
            inline: !a.do_read,
        };
        let r = Remote {
            addr: remote.buf_addr,
            rkey: remote.rkey,
            len: remote.buf_size,
        };
        batches.push(SendBatch::new(qp, &mr, spec, Some(r))?);
    }
    let mut counters_per_qp: Vec<UnsignaledCounter> = (0..a.num_clients)
        .map(|_| UnsignaledCounter::with_reap(a.unsig_batch, a.reap, a.queue_depth))
        .collect();
    let timeout = PollTimeout::default();
    let n = batches.len() as u64;
    let mut seed: u64 = 0xdead_beef ^ t as u64;
    let mut ops = 0u64;
    counters.start(t);
    let limit = a.common.op_limit();
    while !stop_requested() && ops < limit {
        // xorshift: a client per op, as the original's hrd_fastrand.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let c = (seed % n) as usize;
        batches[c].post_selective(&mut counters_per_qp[c], timeout)?;
        ops += 1;
        counters.set(t, ops);
    }
    counters.stop(t);
    drop(batches);
    for (qp, counter) in qps.iter().zip(&mut counters_per_qp) {
        counter.drain(qp.send_cq(), timeout)?;
    }
    finish_active(&reg, &format!("server-{t}"))
}
