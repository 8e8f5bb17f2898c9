//! atomics-sequencer: RDMA atomics on an array of 8-byte counters in the server's memory, and
//! the DrTM-KV emulation (READs plus atomics).
//!
//! One server thread registers `buf-size` bytes (SysV key `shm-key`, as the original) and
//! connects `qps-per-client` RC QPs to each of `num-clients` client threads. Each client posts
//! postlists of FETCH_AND_ADD(1) on counter `index·stride` (a random index, or always 0 with
//! `--use-random 0`: the atomics-based sequencer), alternating between its QPs. With
//! `--emulate-drtm 1` an operation is an atomic (at `+24`, DrTM's lock word) with probability
//! `2U / (100 + U)` and otherwise a 64-byte READ (U = `--update-percentage`): two atomics per
//! PUT, one READ per GET. The server's buffer allows remote atomics (and READs only for DrTM);
//! the clients' buffers allow nothing remote.

use std::sync::Arc;

use clap::{CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::region::{self, RegionPort};
use crate::framework::seq_verify::mix;
use crate::framework::{
    self, counts_at_least_one, flag01, idle_until_peers_done, publish_done, require, Benchmark,
    CommonArgs, Endpoint, EndpointSpec, Family, Meter, Output, Plan, QueueArgs, Role, RoleSpec,
    RollCall, ThreadCtx, Topology,
};
use crate::hot::{
    poll_one, Op, PollTimeout, Postlist, Remote, SendBatch, SendSpec, UnsignaledCounter,
};
use crate::registry::{PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::{Access, Port, QpType, QueuePair};

/// DrTM's atomic field inside a 64-byte key-value slot (16-byte key, then version and lock).
const DRTM_ATOMIC_OFFSET: u64 = 24;

/// atomics-sequencer's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "atomics-sequencer",
    mut_arg("verify", |a| a.help("Check the counters once the run ends: the server sums its counters and compares with the FETCH_AND_ADDs the clients completed")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    mut_arg("unsig_batch", |a| a.default_value("32").help("One signaled WR every N, per QP (kAppUnsigBatch)")),
    about = "RDMA atomics on an array of counters, an atomics-based sequencer (--use-random 0), \
or DrTM-KV's READ/atomic mix (ATC'16 rdma_bench)"
)]
pub(crate) struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Clients: WRs per doorbell
    #[arg(long, default_value_t = 16, value_parser = crate::units::count::<u32>)]
    pub postlist: u32,
    /// Server ports (the server makes QPs on ports base-port-index ..+N)
    #[arg(long, alias = "num_server_ports", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_server_ports: usize,
    /// Client ports (client t uses port base-port-index + t mod N)
    #[arg(long, alias = "num_client_ports", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_client_ports: usize,
    /// Bytes of counters at the server (kAppBufSize)
    #[arg(long, alias = "buf_size", default_value_t = 1 << 30, value_parser = crate::units::count::<usize>)]
    pub buf_size: usize,
    /// Counters (and DrTM slots) are this many bytes apart (kAppStrideSize)
    #[arg(long, default_value_t = 64, value_parser = crate::units::count::<usize>)]
    pub stride: usize,
    /// 1: a random counter per operation; 0: all clients on counter 0, the atomics-based
    /// sequencer (kAppUseRandom)
    #[arg(long, alias = "use_random", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_random: bool,
    /// 1: emulate DrTM-KV with READs and atomics (kAppEmulateDrTM)
    #[arg(long, alias = "emulate_drtm", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub emulate_drtm: bool,
    /// DrTM: percentage of PUTs (kAppUpdatePercentage)
    #[arg(long, alias = "update_percentage", default_value_t = 10)]
    pub update_percentage: u64,
    /// Client threads in the run; the server waits for all of them (kAppNumClients)
    #[arg(long, alias = "num_clients", default_value_t = 32, value_parser = crate::units::count::<usize>)]
    pub num_clients: usize,
    /// RC QPs per client thread (kAppQPsPerClient)
    #[arg(long, alias = "qps_per_client", default_value_t = 2, value_parser = crate::units::count::<usize>)]
    pub qps_per_client: usize,
    /// Largest postlist accepted (kAppMaxPostlist)
    #[arg(long, alias = "max_postlist", default_value_t = 64, value_parser = crate::units::count::<u32>)]
    pub max_postlist: u32,
    /// SysV key of the server's buffer (kAppServerSHMKey)
    #[arg(long, alias = "shm_key", default_value_t = 24)]
    pub shm_key: i32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    a.queue.check(a.postlist, a.max_postlist)?;
    counts_at_least_one(&[
        ("--num-server-ports", a.num_server_ports as u64),
        ("--num-client-ports", a.num_client_ports as u64),
        ("--num-clients", a.num_clients as u64),
        ("--qps-per-client", a.qps_per_client as u64),
    ])?;
    require(a.stride >= 8 && a.stride.is_multiple_of(8), || {
        format!(
            "stride {} must be a positive multiple of 8 (atomics are 8-byte aligned)",
            a.stride
        )
    })?;
    require(a.buf_size >= a.stride, || {
        format!(
            "buf-size {} is smaller than one stride ({})",
            a.buf_size, a.stride
        )
    })?;
    require(a.update_percentage <= 100, || {
        format!("update-percentage {} is above 100", a.update_percentage)
    })?;
    if a.emulate_drtm {
        require(a.stride >= 64, || {
            format!(
                "DrTM emulation READs 64-byte slots: stride {} must be at least 64",
                a.stride
            )
        })?;
        require(a.use_random, || {
            "DrTM emulation needs --use-random 1 (one slot per key)".into()
        })?;
    }
    a.topo
        .check_roles(a.num_clients, "num-clients", "the server runs one thread")?;
    Ok(())
}

fn entry() -> Result<()> {
    let a = Args::parse();
    validate(&a)?;
    let reg = a.common.registry()?;
    if a.topo.is_client {
        framework::run(&Clients { a: &a, reg }, &a.common)?;
    } else {
        framework::run(&Server { a: &a, reg }, &a.common)?;
    }
    Ok(())
}

impl Args {
    fn info(&self) -> RunInfo {
        RunInfo {
            bench: BENCH.name,
            role: self.topo.role_name(),
            op: if self.emulate_drtm {
                "DRTM"
            } else {
                "FETCH_ADD"
            },
            size: 8,
            postlist: u64::from(self.postlist),
            first_id: self.topo.first_id(),
            json: self.common.json,
        }
    }
}

/// Refuses a device without atomics, by name.
fn need_atomics(port: &Port) -> Result<()> {
    require(port.context().supports_atomics()?, || {
        format!(
            "device {} does not support RDMA atomics (atomic_cap is IBV_ATOMIC_NONE)",
            port.context().name()
        )
    })
}

/// The counter word of slot `index`.
fn counter_offset(a: &Args, index: u64) -> u64 {
    index * a.stride as u64
        + if a.emulate_drtm {
            DRTM_ATOMIC_OFFSET
        } else {
            0
        }
}

/// The server: one thread that exposes the counters to every client's QPs and waits.
struct Server<'a> {
    a: &'a Args,
    reg: Arc<Registry>,
}

/// The server's region and its clients' connections.
struct Counted {
    ports: Vec<RegionPort>,
    qps: Vec<QueuePair>,
    client_runs: Vec<u64>,
    _watches: Vec<PeerWatch>,
}

impl Role for Server<'_> {
    type Thread = Counted;

    fn plan(&self) -> Plan {
        Plan::passive(self.a.info(), 1)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Counted> {
        let (a, reg) = (self.a, &self.reg);
        let access = Access::LOCAL_WRITE
            | Access::REMOTE_ATOMIC
            | if a.emulate_drtm {
                Access::REMOTE_READ
            } else {
                Access::NONE
            };
        let ports = region::open(
            ctx,
            a.num_server_ports,
            a.shm_key,
            a.buf_size,
            access,
            a.num_clients * a.qps_per_client,
            need_atomics,
        )?;
        let mut qps = Vec::new();
        let mut client_runs = Vec::new();
        let mut watches = Vec::new();
        let mut roll = RollCall::new("client", "--num-clients", a.num_clients);
        for c in 0..a.num_clients {
            let p = c % a.num_server_ports;
            for j in 0..a.qps_per_client {
                let me = format!("server-{p}-{}", c * a.qps_per_client + j);
                let peer = format!("client-{c}-{j}");
                let (qp, remote) = ports[p]
                    .accept(QpType::Rc, reg, &me, &peer, ctx.wait())
                    .map_err(|e| roll.missing(e))?;
                if j == 0 {
                    client_runs.push(remote.run_id);
                    // A client killed mid-run leaves no done marker: the run ends as "peer lost".
                    watches.push(reg.watch(
                        &format!("client-{c}-0"),
                        remote.run_id,
                        &format!("client-{c}"),
                    ));
                }
                qps.push(qp);
            }
            roll.came();
            println!(
                "main: Server connected client {c} ({} QPs)",
                a.qps_per_client
            );
        }
        Ok(Counted {
            ports,
            qps,
            client_runs,
            _watches: watches,
        })
    }

    fn measure(&self, s: &mut Counted, m: &mut Meter<'_>) -> Result<()> {
        let clients: Vec<(String, u64)> = (s.client_runs.iter().enumerate())
            .map(|(c, run)| (format!("client-{c}"), *run))
            .collect();
        idle_until_peers_done(&self.reg, &clients, m)
    }

    fn finish(&self, s: Counted, ctx: &ThreadCtx<'_>) -> Result<()> {
        let (a, reg) = (self.a, &self.reg);
        let mr = &s.ports[0].mr;
        let slots = (a.buf_size / a.stride) as u64;
        let total = (0..slots)
            .filter(|&i| counter_offset(a, i) + 8 <= a.buf_size as u64)
            .fold(0u64, |s, i| {
                s.wrapping_add(mr.load_u64(counter_offset(a, i) as usize))
            });
        println!("main: Counter = {total} (sum of all counters)");
        if a.common.verify && ctx.attention.stopped_by_signal() {
            println!("main: verify skipped: stopped by a signal before every client could report");
        } else if a.common.verify {
            let mut atomics = 0u64;
            for c in 0..a.num_clients {
                let rec = reg
                    .lookup_result(&format!("client-{c}"))?
                    .filter(|r| r.get("server_run") == Some(reg.run_id()))
                    .ok_or_else(|| {
                        Error::Verify(format!("client {c} did not report its atomics"))
                    })?;
                atomics += rec.get("atomics").unwrap_or(0);
            }
            if total != atomics {
                return Err(Error::Verify(format!(
                    "the counters add up to {total}, but the clients completed {atomics} FETCH_AND_ADD(1)s"
                )));
            }
            println!("main: verify ok: the counters add up to the {atomics} FETCH_AND_ADDs the clients completed");
        }
        drop(s.qps);
        Ok(())
    }
}

/// libhrd's hrd_fastrand: a 64-bit LCG, upper half out.
#[inline(always)]
fn fastrand(seed: &mut u64) -> u32 {
    *seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
    (*seed >> 32) as u32
}

/// The clients: each thread posts postlists of atomics (or DrTM's mix) over its QPs in turn.
struct Clients<'a> {
    a: &'a Args,
    reg: Arc<Registry>,
}

/// A client thread's QPs and their prebuilt postlists.
struct Client {
    id: usize,
    me: String,
    eps: Vec<Endpoint>,
    batches: Vec<SendBatch>,
    sig: Vec<UnsignaledCounter>,
    server_run: u64,
    _watch: PeerWatch,
    atomics: u64,
    reads: u64,
}

impl Role for Clients<'_> {
    type Thread = Client;

    fn plan(&self) -> Plan {
        Plan::counting(self.a.info(), self.a.topo.threads())
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Client> {
        let (a, reg) = (self.a, &self.reg);
        let id = ctx.global_id;
        let port = ctx.open_port(a.common.port_index + id % a.num_client_ports)?;
        need_atomics(&port)?;
        let spec = EndpointSpec {
            qp_type: QpType::Rc,
            queue_depth: a.queue.queue_depth,
            recv_depth: 1,
            max_inline: 0,
            buf_size: 4096,
            fill: 0,
            ex: false,
            // READ data and atomics' old values land here; nothing remote comes in.
            access: Some(Access::LOCAL_WRITE),
        };
        let mut eps = Vec::new();
        let mut batches = Vec::new();
        let mut server_run = 0;
        let me = format!("client-{id}");
        for j in 0..a.qps_per_client {
            let peer = format!(
                "server-{}-{}",
                id % a.num_server_ports,
                id * a.qps_per_client + j
            );
            let placement = a.common.placement();
            let (mut ep, remote) = Endpoint::meet(
                &port,
                spec,
                placement,
                reg,
                &format!("{me}-{j}"),
                &peer,
                ctx.wait(),
            )?;
            server_run = remote.run_id;
            let remote = Remote::of(&remote.info);
            let (op, size) = if a.emulate_drtm {
                (Op::Read, 64)
            } else {
                (Op::FetchAdd(1), 8)
            };
            let send = SendSpec {
                op,
                postlist: a.postlist as usize,
                size,
                stride: 0,
                local_offset: 0,
                remote_offset: 0,
                inline: false,
            };
            let (qp, mr) = ep.parts();
            batches.push(SendBatch::new(qp, mr, send, Some(remote))?);
            eps.push(ep);
        }
        let server0 = format!(
            "server-{}-{}",
            id % a.num_server_ports,
            id * a.qps_per_client
        );
        let watch = reg.watch(&server0, server_run, &server0);
        Ok(Client {
            id,
            me,
            eps,
            batches,
            sig: (0..a.qps_per_client).map(|_| a.queue.counter()).collect(),
            server_run,
            _watch: watch,
            atomics: 0,
            reads: 0,
        })
    }

    fn measure(&self, c: &mut Client, m: &mut Meter<'_>) -> Result<()> {
        let a = self.a;
        let slots = (a.buf_size / a.stride) as u64;
        let mut seed = 0xdead_beef ^ mix(c.id as u64);
        let timeout = m.poll_timeout();
        let mut ops = 0u64;
        let mut q = 0;
        m.start();
        while m.checkpoint() && ops < a.common.op_limit() {
            for i in 0..a.postlist as usize {
                // DrTM: 2U atomics for every 100 − U READs (two atomics per PUT).
                let atomic = !a.emulate_drtm
                    || u64::from(fastrand(&mut seed)) % (100 + a.update_percentage)
                        < 2 * a.update_percentage;
                let index = if a.use_random {
                    u64::from(fastrand(&mut seed)) % slots
                } else {
                    0
                };
                if atomic {
                    c.batches[q].retarget(i, Op::FetchAdd(1), counter_offset(a, index))?;
                    c.atomics += 1;
                } else {
                    c.batches[q].retarget(i, Op::Read, index * a.stride as u64)?;
                    c.reads += 1;
                }
            }
            c.batches[q].post_selective(c.eps[q].qp_mut(), &mut c.sig[q], timeout)?;
            ops += u64::from(a.postlist);
            m.count(ops);
            q = if q + 1 == c.eps.len() { 0 } else { q + 1 };
        }
        Ok(())
    }

    fn finish(&self, mut c: Client, ctx: &ThreadCtx<'_>) -> Result<()> {
        let (a, reg) = (self.a, &self.reg);
        if ctx.attention.stopped_by_signal() {
            // The server is most likely being stopped too: nothing to fence or verify.
            return publish_done(reg, &c.me);
        }
        // Every FETCH_AND_ADD executed before we report: reap, then one signaled FETCH_AND_ADD(0)
        // per QP, whose completion (RC completes in order) covers all before it.
        let timeout = PollTimeout::new(ctx.attention);
        for (j, ep) in c.eps.iter_mut().enumerate() {
            c.sig[j].drain(ep.qp().send_cq(), timeout)?;
            let remote = c.batches[j]
                .remote()
                .ok_or_else(|| Error::protocol("batch lost its remote"))?;
            let fence = SendSpec {
                op: Op::FetchAdd(0),
                postlist: 1,
                size: 8,
                stride: 0,
                local_offset: 0,
                remote_offset: counter_offset(a, 0),
                inline: false,
            };
            let (qp, mr) = ep.parts();
            let mut b = SendBatch::new(qp, mr, fence, Some(remote))?;
            b.set_signaled(0, true);
            b.post(qp)?;
            poll_one(qp.send_cq(), timeout)?;
        }
        println!(
            "main: Client {}: {} atomics, {} READs",
            c.id, c.atomics, c.reads
        );
        if a.common.verify {
            reg.publish_result(
                &c.me,
                &[("server_run", c.server_run), ("atomics", c.atomics)],
            )?;
        }
        publish_done(reg, &c.me)
    }
}

/// atomics-sequencer.
pub static BENCH: Benchmark = Benchmark {
    name: "atomics-sequencer",
    family: Family::Application,
    roles: &[
        RoleSpec::SERVER.passive().outliving().own_threads(),
        RoleSpec::CLIENT,
    ],
    reports: "client",
    op: "FETCH_ADD",
    output: Output::Rate,
    suite: &[
        "--num-clients 1 --postlist 16 --buf-size 16777216",
        "--num-clients 1 --postlist 16 --emulate-drtm 0 --use-random 0 --stride 8 --buf-size 4096",
    ],
    command: Args::command,
    entry,
};
