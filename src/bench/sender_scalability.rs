//! sender-scalability: how the outbound rate of one thread scales with the number of QPs it drives.
//! Each server thread connects one RC/UC QP to each of `num-clients` client QPs and posts single
//! READs/WRITEs to a client picked at random per operation, with selective signaling per QP
//! (unsig batch 4, as the original). Clients are passive targets.

use std::sync::Arc;

use clap::Parser;

use super::common::{
    check_inline, fill_byte, flag01, port_index_for, require, slot_stride, CommonArgs, QueueArgs,
    Topology,
};
use super::connected::{announce_done, transport_loss};
use super::endpoint::{hello, idle_until_peer_done, Endpoint, EndpointSpec};
use super::runner::{run_threads, Role};
use crate::control::stop_requested;
use crate::error::Result;
use crate::hot::{
    Op, PollTimeout, Postlist, RecvBatch, Remote, SendBatch, SendSpec, UnsignaledCounter,
};
use crate::mem::HugeBuffer;
use crate::registry::{Entry, PeerWatch, Registry};
use crate::stats::{Counters, RunInfo};
use crate::verbs::{
    Access, CompletionQueue, MemoryRegion, ProtectionDomain, QpCaps, QpType, QueuePair,
};

/// sender-scalability's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "sender-scalability",
    version,
    args_override_self = true,
    about = "Outbound rate vs number of QPs (ATC'16 rdma_bench): one thread drives many client QPs",
    mut_arg("num_threads", |a| a.help(
        "Server: server threads [default: 1]. Client: client threads in this process, one per \
         client QP [default: num-clients, i.e. every client on this machine]"
    )),
    mut_arg("unsig_batch", |a| a.default_value("4").help("One signaled WR every N, per QP")),
)]
pub struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Client QPs in the whole run (kAppNumClients); client ids are machine-id × num-threads + t
    #[arg(long, alias = "num_clients", default_value_t = 16)]
    pub num_clients: usize,
    /// Clients: server threads to connect to (the server's --num-threads)
    #[arg(long, alias = "num_servers", default_value_t = 1)]
    pub num_servers: usize,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per READ/WRITE
    #[arg(long, default_value_t = 32)]
    pub size: u64,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
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
        self.topo.num_threads.unwrap_or(if self.topo.is_client {
            self.num_clients
        } else {
            1
        })
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
    a.queue.check(1, 1)?;
    if !a.do_read {
        check_inline(a.size, a.queue.max_inline, "WRITEs")?;
    }
    let need = a.num_clients * slot_stride(a.size);
    require(need <= a.buf_size, || {
        format!(
            "num-clients × round_up(size, 64) = {need} bytes does not fit the {}-byte buffer",
            a.buf_size
        )
    })?;
    if a.topo.is_client {
        let last = (a.topo.machine_id + 1) * a.threads();
        require(last <= a.num_clients, || {
            format!(
                "client ids up to {} exceed num-clients ({}): check --machine-id and --num-threads",
                last - 1,
                a.num_clients
            )
        })?;
    }
    Ok(())
}

/// Runs sender-scalability.
pub fn run(a: Args) -> Result<()> {
    validate(&a)?;
    let threads = a.threads();
    let first_id = if a.topo.is_client {
        a.topo.machine_id * threads
    } else {
        0
    };
    let info = RunInfo {
        bench: "sender-scalability",
        role: a.topo.role_name(),
        op: if a.do_read { "READ" } else { "WRITE" },
        size: a.size,
        postlist: 1,
        first_id,
        json: a.common.json,
    };
    println!("main: Using {threads} threads");
    let role = if a.topo.is_client {
        Role::Passive
    } else {
        Role::Counting
    };
    run_threads(info, role, threads, &a.common, |t, counters| {
        if a.topo.is_client {
            client(&a, first_id + t)
        } else {
            server(&a, t, counters)
        }
    })?;
    Ok(())
}

fn qp_type(a: &Args) -> QpType {
    if a.use_uc {
        QpType::Uc
    } else {
        QpType::Rc
    }
}

fn client(a: &Args, global_id: usize) -> Result<()> {
    let reg = a.common.registry()?;
    let port = a
        .common
        .open_port(port_index_for(&a.common, a.topo.dual_port, global_id))?;
    let mut eps = Vec::with_capacity(a.num_servers);
    for s in 0..a.num_servers {
        let spec = EndpointSpec {
            qp_type: qp_type(a),
            queue_depth: a.queue.queue_depth,
            recv_depth: 1,
            max_inline: a.queue.max_inline,
            buf_size: a.buf_size,
            fill: fill_byte(false, global_id),
            ex: false,
            access: None,
        };
        let me = format!("client-{global_id}-{s}");
        let peer = format!("server-{s}-{global_id}");
        let (ep, remote) = Endpoint::meet(
            &port,
            spec,
            a.common.placement(),
            &reg,
            &me,
            &peer,
            a.common.wait(),
        )?;
        let watch = reg.watch(&peer, remote.run_id, &format!("server-{s}"));
        eps.push((ep, remote.run_id, watch));
    }
    println!(
        "main: Client {global_id} connected to {} server thread(s)",
        a.num_servers
    );
    for (s, (_, run, _)) in eps.iter().enumerate() {
        idle_until_peer_done(&reg, &format!("server-{s}"), *run)?;
    }
    Ok(())
}

/// A server thread's QPs, one per client, each with its own CQ (as libhrd makes them), sharing
/// one PD and one region.
struct ServerQps {
    qps: Vec<QueuePair>,
    remotes: Vec<Entry>,
    mr: Arc<MemoryRegion>,
    reg: Arc<Registry>,
    /// The clients' liveness, checked by the report clock while held.
    watches: Vec<PeerWatch>,
}

fn connect_server_qps(a: &Args, t: usize) -> Result<ServerQps> {
    let port = a
        .common
        .open_port(port_index_for(&a.common, a.topo.dual_port, t))?;
    let pd = ProtectionDomain::new(port.context())?;
    let buf = HugeBuffer::new(a.buf_size, a.common.placement())?;
    let mr = MemoryRegion::register(&pd, buf, Access::LOCAL_WRITE)?;
    mr.fill(fill_byte(true, t));
    let reg = a.common.registry()?;
    let caps = QpCaps {
        max_send_wr: a.queue.queue_depth,
        max_recv_wr: 1,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: a.queue.max_inline,
    };
    let mut qps = Vec::with_capacity(a.num_clients);
    let mut remotes = Vec::with_capacity(a.num_clients);
    let mut watches = Vec::with_capacity(a.num_clients);
    for c in 0..a.num_clients {
        let cq = CompletionQueue::new(port.context(), a.queue.queue_depth)?;
        let mut qp = QueuePair::new(&pd, &port, &cq, &cq, qp_type(a), caps)?;
        let info = qp.info(None);
        let me = format!("server-{t}-{c}");
        let peer = format!("client-{c}-{t}");
        let mut recv = RecvBatch::new(&mut qp, &mr, 1, 0, 0, 0)?;
        let wait = a.common.wait();
        let remote = reg.rendezvous(&me, &peer, &info, wait, |r| {
            qp.connect(r)?;
            recv.post(&mut qp, 1)
        })?;
        hello(&mut qp, &mr, reg.run_id(), &peer, &remote, wait)?;
        watches.push(reg.watch(&peer, remote.run_id, &peer));
        remotes.push(remote);
        qps.push(qp);
    }
    println!("main: Server {t} connected to {} client QPs", a.num_clients);
    Ok(ServerQps {
        qps,
        remotes,
        mr,
        reg,
        watches,
    })
}

fn server(a: &Args, t: usize, counters: &Counters) -> Result<()> {
    let ServerQps {
        mut qps,
        remotes,
        mr,
        reg,
        watches,
    } = connect_server_qps(a, t)?;
    let stride = slot_stride(a.size);
    let mut batches = Vec::with_capacity(a.num_clients);
    for (c, (qp, remote)) in qps.iter_mut().zip(&remotes).enumerate() {
        let spec = SendSpec {
            op: if a.do_read { Op::Read } else { Op::Write },
            postlist: 1,
            size: a.size as u32,
            stride,
            local_offset: c * stride,
            remote_offset: (c * stride) as u64,
            inline: !a.do_read,
        };
        let r = Remote::of(&remote.info);
        batches.push(SendBatch::new(qp, &mr, spec, Some(r))?);
    }
    let mut per_qp: Vec<UnsignaledCounter> =
        (0..a.num_clients).map(|_| a.queue.counter()).collect();
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
        batches[c]
            .post_selective(&mut qps[c], &mut per_qp[c], timeout)
            .map_err(|e| transport_loss(e, &format!("client-{c}-{t}"), ops > 0))?;
        ops += 1;
        counters.set(t, ops);
    }
    counters.stop(t);
    for (qp, counter) in qps.iter().zip(&mut per_qp) {
        counter.drain(qp.send_cq(), timeout)?;
    }
    drop(watches);
    announce_done(&reg, &format!("server-{t}"))
}
