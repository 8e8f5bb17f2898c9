//! sender-scalability: how the outbound rate of one thread scales with the number of QPs it drives.
//! Each server thread connects one RC/UC QP to each of `num-clients` client QPs and posts single
//! READs/WRITEs to a client picked at random per operation, with selective signaling per QP
//! (unsig batch 4, as the original). Clients are passive targets.

use std::sync::Arc;

use clap::{CommandFactory, Parser};

use crate::error::Result;
use crate::framework::{
    self, announce_done, check_inline, connect_qp, counts_at_least_one, fill_byte, flag01,
    idle_until_peers_done, peer_lost, port_index_for, require, slot_stride, Benchmark, CommonArgs,
    Endpoint, EndpointSpec, Family, Meter, Output, Plan, QueueArgs, Role, ThreadCtx, Topology,
};
use crate::hot::{Op, Postlist, Remote, SendBatch, SendSpec, UnsignaledCounter};
use crate::registry::{PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::{Access, QpCaps, QpSpec, QpType, QueuePair, Resources};

/// sender-scalability's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "sender-scalability",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Outbound rate vs number of QPs (ATC'16 rdma_bench): one thread drives many client QPs",
    mut_arg("num_threads", |a| a.help(
        "Server: server threads [default: 1]. Client: client threads in this process, one per \
         client QP [default: num-clients, i.e. every client on this machine]"
    )),
    mut_arg("unsig_batch", |a| a.default_value("4").help("One signaled WR every N, per QP")),
)]
pub(crate) struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Client QPs in the whole run (kAppNumClients); client ids are machine-id × num-threads + t
    #[arg(long, alias = "num_clients", default_value_t = 16, value_parser = crate::units::count::<usize>)]
    pub num_clients: usize,
    /// Clients: server threads to connect to (the server's --num-threads)
    #[arg(long, alias = "num_servers", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_servers: usize,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per READ/WRITE
    #[arg(long, default_value_t = 32, value_parser = crate::units::count::<u64>)]
    pub size: u64,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 2 * 1024 * 1024, value_parser = crate::units::count::<usize>)]
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
pub(crate) fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    counts_at_least_one(&[
        ("--num-threads", a.threads() as u64),
        ("--num-clients", a.num_clients as u64),
        ("--num-servers", a.num_servers as u64),
        ("--size", a.size),
    ])?;
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

fn entry() -> Result<()> {
    let a = Args::parse();
    validate(&a)?;
    if a.topo.is_client {
        framework::run(&Clients(&a), &a.common)?;
    } else {
        framework::run(&Servers(&a), &a.common)?;
    }
    Ok(())
}

impl Args {
    fn plan(&self) -> Plan {
        let threads = self.threads();
        let info = RunInfo {
            bench: BENCH.name,
            role: self.topo.role_name(),
            op: if self.do_read { "READ" } else { "WRITE" },
            size: self.size,
            postlist: 1,
            first_id: if self.topo.is_client {
                self.topo.machine_id * threads
            } else {
                0
            },
            json: self.common.json,
        };
        if self.topo.is_client {
            Plan::passive(info, threads)
        } else {
            Plan::counting(info, threads)
        }
    }

    fn qp_type(&self) -> QpType {
        if self.use_uc {
            QpType::Uc
        } else {
            QpType::Rc
        }
    }
}

/// The passive side: client thread `c` exposes one QP and buffer to each server thread.
struct Clients<'a>(&'a Args);

/// A client thread's QPs (one per server thread), their runs and liveness watches.
struct ClientQps {
    reg: Arc<Registry>,
    eps: Vec<(Endpoint, u64, PeerWatch)>,
}

impl Role for Clients<'_> {
    type Thread = ClientQps;

    fn plan(&self) -> Plan {
        self.0.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<ClientQps> {
        let a = self.0;
        let id = ctx.global_id;
        let reg = a.common.registry()?;
        let port = ctx.open_port(port_index_for(&a.common, a.topo.dual_port, id))?;
        let mut eps = Vec::with_capacity(a.num_servers);
        for s in 0..a.num_servers {
            let spec = EndpointSpec {
                qp_type: a.qp_type(),
                queue_depth: a.queue.queue_depth,
                recv_depth: 1,
                max_inline: a.queue.max_inline,
                buf_size: a.buf_size,
                fill: fill_byte(false, id),
                ex: false,
                access: None,
            };
            let me = format!("client-{id}-{s}");
            let peer = format!("server-{s}-{id}");
            let placement = a.common.placement();
            let (ep, remote) =
                Endpoint::meet(&port, spec, placement, &reg, &me, &peer, ctx.wait())?;
            let watch = reg.watch(&peer, remote.run_id, &format!("server-{s}"));
            eps.push((ep, remote.run_id, watch));
        }
        println!(
            "main: Client {id} connected to {} server thread(s)",
            a.num_servers
        );
        Ok(ClientQps { reg, eps })
    }

    fn measure(&self, c: &mut ClientQps, m: &mut Meter<'_>) -> Result<()> {
        let servers: Vec<(String, u64)> = (c.eps.iter().enumerate())
            .map(|(s, (_, run, _))| (format!("server-{s}"), *run))
            .collect();
        idle_until_peers_done(&c.reg, &servers, m)
    }
}

/// The active side: server thread `t` drives one QP per client, a random one per operation.
struct Servers<'a>(&'a Args);

/// A server thread's QPs, one per client, each with its own CQ (as libhrd makes them), sharing
/// one PD and one region; a prebuilt single WR and a signaling counter per QP.
struct ServerQps {
    qps: Vec<QueuePair>,
    batches: Vec<SendBatch>,
    per_qp: Vec<UnsignaledCounter>,
    reg: Arc<Registry>,
    /// The clients' liveness, checked by the report clock while held.
    watches: Vec<PeerWatch>,
}

impl Role for Servers<'_> {
    type Thread = ServerQps;

    fn plan(&self) -> Plan {
        self.0.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<ServerQps> {
        let a = self.0;
        let t = ctx.t;
        let port = ctx.open_port(port_index_for(&a.common, a.topo.dual_port, t))?;
        // One PD and region for all the thread's QPs; each QP with its own CQ, as libhrd.
        let res = Resources::new(&port)?;
        let mr = res.region(a.buf_size, a.common.placement(), Access::LOCAL_WRITE)?;
        mr.fill(fill_byte(true, t));
        let reg = a.common.registry()?;
        let caps = QpCaps {
            max_send_wr: a.queue.queue_depth,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: a.queue.max_inline,
        };
        let stride = slot_stride(a.size);
        let mut qps = Vec::with_capacity(a.num_clients);
        let mut batches = Vec::with_capacity(a.num_clients);
        let mut watches = Vec::with_capacity(a.num_clients);
        for c in 0..a.num_clients {
            let mut qp = res.qp(QpSpec::new(a.qp_type(), caps))?;
            let info = qp.info(None);
            let me = format!("server-{t}-{c}");
            let peer = format!("client-{c}-{t}");
            let remote = connect_qp(&mut qp, &mr, &info, &reg, &me, &peer, ctx.wait())?;
            watches.push(reg.watch(&peer, remote.run_id, &peer));
            let spec = SendSpec {
                op: if a.do_read { Op::Read } else { Op::Write },
                postlist: 1,
                size: a.size as u32,
                stride,
                local_offset: c * stride,
                remote_offset: (c * stride) as u64,
                inline: !a.do_read,
            };
            batches.push(SendBatch::new(
                &mut qp,
                &mr,
                spec,
                Some(Remote::of(&remote.info)),
            )?);
            qps.push(qp);
        }
        println!("main: Server {t} connected to {} client QPs", a.num_clients);
        Ok(ServerQps {
            qps,
            batches,
            per_qp: (0..a.num_clients).map(|_| a.queue.counter()).collect(),
            reg,
            watches,
        })
    }

    fn measure(&self, s: &mut ServerQps, m: &mut Meter<'_>) -> Result<()> {
        let t = m.thread();
        let timeout = m.poll_timeout();
        let n = s.batches.len() as u64;
        let mut seed: u64 = 0xdead_beef ^ t as u64;
        let mut ops = 0u64;
        let limit = self.0.common.op_limit();
        m.start();
        while m.checkpoint() && ops < limit {
            // xorshift: a client per op, as the original's hrd_fastrand.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let c = (seed % n) as usize;
            s.batches[c]
                .post_selective(&mut s.qps[c], &mut s.per_qp[c], timeout)
                .map_err(|e| peer_lost(e, &format!("client-{c}-{t}"), ops > 0))?;
            ops += 1;
            m.count(ops);
        }
        m.stop();
        for (qp, counter) in s.qps.iter().zip(&mut s.per_qp) {
            counter.drain(qp.send_cq(), timeout)?;
        }
        Ok(())
    }

    fn finish(&self, s: ServerQps, ctx: &ThreadCtx<'_>) -> Result<()> {
        drop(s.watches);
        announce_done(&s.reg, &format!("server-{}", ctx.t))
    }
}

/// sender-scalability.
pub static BENCH: Benchmark = Benchmark {
    name: "sender-scalability",
    family: Family::Microbenchmark,
    roles: crate::framework::SERVER_POSTS,
    reports: "server",
    op: "WRITE",
    output: Output::Rate,
    suite: &["--size 32 --num-clients 16"],
    command: Args::command,
    entry,
};
