//! What the request-region RPCs (ws-sequencer, ws-echo, HERD) share: their flags and checks,
//! the master (it creates the request region — a SysV segment every server port registers,
//! remote-write only —, connects one QP per client over it, publishes the slot layout every
//! role must agree on, and leaves once every client is done), a worker's UD reply QPs and its
//! clients' addresses, and a client's connection (a UC/RC QP to the master, a UD QP for the
//! replies). Workers, in another process, attach the segment by key and poll it.

mod links;
mod master;
mod window;

pub use links::{connect_client, connect_worker, ClientLink, WorkerLink};
pub use master::{check_layout, Master, MasterLink, MASTER};
pub use window::{run_window, WindowClient};

use super::args::{counts_at_least_one, flag01, require, CommonArgs, QueueArgs, Topology};
use super::{Plan, RoleSpec};
use crate::error::Result;
use crate::hot::SlotLayout;
use crate::stats::RunInfo;

/// The flags every request-region RPC has (ws-*'s defaults; HERD changes some with `mut_arg`).
#[derive(clap::Args, Debug, Clone)]
pub struct RpcArgs {
    /// 1: run the master (request region and the clients' connected QPs)
    #[arg(long, default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub master: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Workers: replies sent with one doorbell at most
    #[arg(long, default_value_t = 32, value_parser = crate::units::count::<u32>)]
    pub postlist: u32,
    /// Requests each client keeps outstanding (WINDOW_SIZE); also the slots per worker and client
    #[arg(long, default_value_t = 32, value_parser = crate::units::count::<usize>)]
    pub window: usize,
    /// Worker threads (NUM_WORKERS)
    #[arg(long, alias = "num_workers", default_value_t = 6, value_parser = crate::units::count::<usize>)]
    pub num_workers: usize,
    /// Client threads in the run, all machines together (NUM_CLIENTS); master and workers wait
    /// for all of them
    #[arg(long, alias = "num_clients", default_value_t = 70, value_parser = crate::units::count::<usize>)]
    pub num_clients: usize,
    /// UD QPs each worker replies over per port, round-robin per batch (NUM_UD_QPS)
    #[arg(long, alias = "num_ud_qps", default_value_t = 3, value_parser = crate::units::count::<usize>)]
    pub num_ud_qps: usize,
    /// Server ports: base-port-index .. +N (client c is served on port c mod N)
    #[arg(long, alias = "num_server_ports", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_server_ports: usize,
    /// Client ports: client c uses port base-port-index + c mod N
    #[arg(long, alias = "num_client_ports", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_client_ports: usize,
    /// 1: requests over UC (the original), 0: over RC
    #[arg(long, alias = "use_uc", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// SysV key of the request region (MASTER_SHM_KEY; port p attaches the same segment)
    #[arg(long, alias = "shm_key", default_value_t = 24)]
    pub shm_key: i32,
    /// Request region bytes (RR_SIZE)
    #[arg(long, alias = "rr_size", default_value_t = 2 << 20, value_parser = crate::units::count::<usize>)]
    pub rr_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

impl RpcArgs {
    /// The request region's layout in slots of `slot_bytes`.
    pub fn layout(&self, slot_bytes: usize) -> SlotLayout {
        SlotLayout {
            workers: self.num_workers,
            clients: self.num_clients,
            window: self.window,
            slot_bytes,
        }
    }

    /// The checks every request-region RPC makes before anything is created: `name` is the
    /// benchmark, `max_postlist` its largest batch, `slot_bytes` its slot size.
    pub fn check(&self, name: &str, max_postlist: u32, slot_bytes: usize) -> Result<()> {
        self.common.check()?;
        self.topo.check()?;
        require(!(self.master && self.topo.is_client), || {
            format!(
                "--master 1 and --is-client 1 are two roles: run {name}'s master, its workers \
                 (--is-client 0) and its clients (--is-client 1) as separate processes"
            )
        })?;
        require(!self.topo.dual_port, || {
            format!(
                "--dual-port is not a flag of {name}: use --num-server-ports/--num-client-ports"
            )
        })?;
        counts_at_least_one(&[
            ("--num-workers", self.num_workers as u64),
            ("--num-clients", self.num_clients as u64),
            ("--num-ud-qps", self.num_ud_qps as u64),
            ("--num-server-ports", self.num_server_ports as u64),
            ("--num-client-ports", self.num_client_ports as u64),
            ("--window", self.window as u64),
        ])?;
        self.queue.check(self.postlist, max_postlist)?;
        require(
            self.window as u64 <= u64::from(self.queue.queue_depth),
            || {
                format!(
                "--window ({}) exceeds --queue-depth ({}): a client's RECV queue holds one reply per outstanding request",
                self.window, self.queue.queue_depth
            )
            },
        )?;
        require(
            self.window as u64 <= u64::from(self.queue.unsig_batch),
            || {
                format!(
                "--window ({}) must not exceed --unsig-batch ({}): a client's unsignaled WRITEs must not outrun its send queue",
                self.window, self.queue.unsig_batch
            )
            },
        )?;
        // Workers only: a pass over the clients finds at most one request per client.
        if !self.master && !self.topo.is_client {
            require(self.postlist as usize <= self.num_clients, || {
                format!(
                    "--postlist ({}) exceeds --num-clients ({}): a worker finds at most one request per client in a pass",
                    self.postlist, self.num_clients
                )
            })?;
        }
        self.layout(slot_bytes).check(self.rr_size)?;
        if self.master {
            require(self.topo.num_threads.is_none(), || {
                "the master runs one thread; --num-threads is for clients".into()
            })
        } else {
            self.topo.check_roles(
                self.num_clients,
                "num-clients",
                "the workers run --num-workers threads",
            )
        }
    }
}

/// What a benchmark tells the roles besides its flags.
#[derive(Debug, Clone, Copy)]
pub struct RpcShape<'a> {
    /// The benchmark's name (report lines).
    pub bench: &'static str,
    /// Request bytes (report lines).
    pub size: u64,
    /// Bytes per request slot.
    pub slot_bytes: usize,
    /// The layout's flags and values, which workers and clients must share with the master.
    pub fields: &'a [(&'static str, u64)],
}

impl RpcShape<'_> {
    /// The workers' plan: `--num-workers` counting threads; their replies carry `reply_size`
    /// bytes.
    pub fn worker_plan(&self, a: &RpcArgs, reply_size: u64) -> Plan {
        let info = RunInfo {
            bench: self.bench,
            role: "Worker",
            op: "SEND",
            size: reply_size,
            postlist: u64::from(a.postlist),
            first_id: 0,
            json: a.common.json,
        };
        Plan::counting(info, a.num_workers)
    }

    /// The clients' plan: this process's client threads.
    pub fn client_plan(&self, a: &RpcArgs) -> Plan {
        let info = RunInfo {
            bench: self.bench,
            role: "Client",
            op: "WRITE",
            size: self.size,
            postlist: 1,
            first_id: a.topo.first_id(),
            json: a.common.json,
        };
        Plan::counting(info, a.topo.threads())
    }
}

/// The request-region RPCs' roles: a master, workers (their own thread count), clients.
pub const ROLES: &[RoleSpec] = &[
    RoleSpec::SERVER
        .named("master", &["--master", "1"])
        .passive()
        .outliving()
        .own_threads(),
    RoleSpec::SERVER
        .named("worker", &[])
        .outliving()
        .own_threads(),
    RoleSpec::CLIENT,
];
