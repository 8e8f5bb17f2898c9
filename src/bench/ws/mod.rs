//! ws-sequencer and ws-echo: clients WRITE requests into a request region that a master
//! process creates (a SysV segment, `--shm-key`) and registers; worker threads of another
//! process attach the segment, poll their slots and answer over UD, batched, rotating over
//! `--num-ud-qps` QPs.
//!
//! Slot (worker `w`, client `c`, window slot `s`) is the original's `OFFSET(w, c, s)`; a client
//! keeps `--window` requests outstanding in all, sending request `k` to worker `k mod
//! num-workers`. A slot comes back to its client only after the worker answered it: a client
//! with fewer than `window` requests out has had every earlier request to that slot answered,
//! because a worker serves a client's slots in order. Every 8-byte word of a request holds its
//! tag (client id and request number); a worker takes a request once the words hold exactly the
//! tag it expects next from that client (a WRITE's bytes land in no guaranteed order, so a
//! non-zero word may be half written), and zeroes the last word.
//!
//! Roles: `--master 1` (the region and the clients' connected QPs), `--is-client 0` (the
//! workers, `--num-workers` threads), `--is-client 1` (client threads).

mod client;
mod master;
mod worker;

use clap::Parser;

use super::common::{flag01, require, CommonArgs, QueueArgs, Topology};
use crate::error::Result;
use crate::hot::SlotLayout;

/// Which of the two benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Replies carry the next value of the workers' shared counter.
    Sequencer,
    /// Replies carry the request's payload back.
    Echo,
}

/// Flags of ws-sequencer and ws-echo.
#[derive(clap::Args, Debug, Clone)]
pub struct WsArgs {
    /// 1: run the master (request region and the clients' connected QPs)
    #[arg(long, default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub master: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Request bytes (ws-echo; ws-sequencer's requests are 8 bytes)
    #[arg(long, default_value_t = 8)]
    pub size: usize,
    /// Workers: replies sent with one doorbell at most
    #[arg(long, default_value_t = 32)]
    pub postlist: u32,
    /// Requests each client keeps outstanding (WINDOW_SIZE); also the slots per worker and client
    #[arg(long, default_value_t = 32)]
    pub window: usize,
    /// Worker threads (NUM_WORKERS)
    #[arg(long, alias = "num_workers", default_value_t = 6)]
    pub num_workers: usize,
    /// Client threads in the run, all machines together (NUM_CLIENTS); master and workers wait
    /// for all of them
    #[arg(long, alias = "num_clients", default_value_t = 70)]
    pub num_clients: usize,
    /// UD QPs each worker replies over per port, round-robin per batch (NUM_UD_QPS)
    #[arg(long, alias = "num_ud_qps", default_value_t = 3)]
    pub num_ud_qps: usize,
    /// Server ports: base-port-index .. +N (client c is served on port c mod N)
    #[arg(long, alias = "num_server_ports", default_value_t = 1)]
    pub num_server_ports: usize,
    /// Client ports: client c uses port base-port-index + c mod N
    #[arg(long, alias = "num_client_ports", default_value_t = 1)]
    pub num_client_ports: usize,
    /// 1: requests over UC (the original), 0: over RC
    #[arg(long, alias = "use_uc", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// SysV key of the request region (MASTER_SHM_KEY; port p attaches the same segment)
    #[arg(long, alias = "shm_key", default_value_t = 24)]
    pub shm_key: i32,
    /// Request region bytes (RR_SIZE)
    #[arg(long, alias = "rr_size", default_value_t = 2 << 20)]
    pub rr_size: usize,
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

/// ws-sequencer's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ws-sequencer",
    version,
    args_override_self = true,
    about = "The paper's WRITE/SEND sequencer (ATC'16 rdma_bench): clients WRITE 8-byte requests \
into the master's request region, workers poll it and reply with batched UD SEND_WITH_IMMs"
)]
pub struct SequencerArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ws: WsArgs,
}

/// ws-echo's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ws-echo",
    version,
    args_override_self = true,
    mut_arg("size", |a| a.default_value("24").help("Request (and reply) bytes: a multiple of 8, at most 56")),
    mut_arg("num_workers", |a| a.default_value("5")),
    mut_arg("num_clients", |a| a.default_value("64")),
    mut_arg("unsig_batch", |a| a.default_value("256").help("One signaled WR every N (selective signaling)")),
    mut_arg("queue_depth", |a| a.default_value("1024").help("Send queue depth (the original's HRD_Q_DEPTH)")),
    about = "The paper's WRITE-request/SEND-reply echo (ATC'16 rdma_bench): clients WRITE requests \
into the master's request region, workers echo them back with batched UD SENDs"
)]
pub struct EchoArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ws: WsArgs,
}

/// Runs ws-sequencer.
pub fn run_sequencer(a: SequencerArgs) -> Result<()> {
    run(Kind::Sequencer, a.ws)
}

/// Runs ws-echo.
pub fn run_echo(a: EchoArgs) -> Result<()> {
    run(Kind::Echo, a.ws)
}

impl WsArgs {
    /// Bytes a request occupies (and a reply carries).
    pub fn payload(&self, kind: Kind) -> usize {
        match kind {
            Kind::Sequencer => 8,
            Kind::Echo => self.size,
        }
    }
    /// The request region's slot layout.
    pub fn layout(&self, kind: Kind) -> SlotLayout {
        SlotLayout {
            workers: self.num_workers,
            clients: self.num_clients,
            window: self.window,
            slot_bytes: match kind {
                Kind::Sequencer => 8,
                Kind::Echo => 64,
            },
        }
    }
}

/// The checks that refuse a run before anything is made.
pub fn validate(kind: Kind, a: &WsArgs) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    require(!a.topo.dual_port, || {
        "--dual-port is not a flag of this benchmark: use --num-server-ports/--num-client-ports"
            .into()
    })?;
    require(
        a.num_workers >= 1 && a.num_clients >= 1 && a.num_ud_qps >= 1,
        || "num-workers, num-clients and num-ud-qps must be at least 1".into(),
    )?;
    require(a.num_server_ports >= 1 && a.num_client_ports >= 1, || {
        "num-server-ports and num-client-ports must be at least 1".into()
    })?;
    a.queue.check(a.postlist, a.max_postlist)?;
    require(a.window >= 1, || "window must be at least 1".into())?;
    require(a.window as u64 <= u64::from(a.queue.queue_depth), || {
        format!(
            "window ({}) exceeds the queue depth ({}): a client's RECV queue holds one reply per outstanding request",
            a.window, a.queue.queue_depth
        )
    })?;
    require(a.window as u64 <= u64::from(a.queue.unsig_batch), || {
        format!(
            "window ({}) must not exceed unsig_batch ({}): a client's unsignaled WRITEs must not outrun its send queue",
            a.window, a.queue.unsig_batch
        )
    })?;
    // Workers only: a pass over the clients finds at most one request per client.
    if !a.master && !a.topo.is_client {
        require(a.postlist as usize <= a.num_clients, || {
            format!(
            "postlist ({}) exceeds num-clients ({}): a worker finds at most one request per client in a pass",
            a.postlist, a.num_clients
        )
        })?;
    }
    match kind {
        Kind::Sequencer => require(a.size == 8, || {
            format!("ws-sequencer's requests are 8 bytes, not {}", a.size)
        })?,
        Kind::Echo => require(a.size >= 8 && a.size <= 56 && a.size % 8 == 0, || {
            format!(
                "size {} must be a multiple of 8 between 8 and 56 (a request and its tag fill one 64-byte slot)",
                a.size
            )
        })?,
    }
    super::common::check_inline(
        a.payload(kind) as u64,
        a.queue.max_inline,
        "requests and replies",
    )?;
    a.layout(kind).check(a.rr_size)?;
    if a.master {
        require(a.topo.num_threads.is_none(), || {
            "the master runs one thread; --num-threads is for clients".into()
        })?;
    } else {
        a.topo.check_roles(
            a.num_clients,
            "num-clients",
            "the workers run --num-workers threads",
        )?;
    }
    Ok(())
}

fn run(kind: Kind, a: WsArgs) -> Result<()> {
    validate(kind, &a)?;
    let reg = a.common.registry()?;
    if a.master {
        master::run(kind, &a, &reg)
    } else if a.topo.is_client {
        client::run(kind, &a, &reg)
    } else {
        worker::run(kind, &a, &reg)
    }
}

/// Registry name of the master's entry (workers wait for it before attaching the region).
const MASTER: &str = "master";

/// What every role must agree on, as the master publishes it.
fn layout_fields(kind: Kind, a: &WsArgs) -> [(&'static str, u64); 4] {
    [
        ("num-workers", a.num_workers as u64),
        ("num-clients", a.num_clients as u64),
        ("window", a.window as u64),
        ("size", a.payload(kind) as u64),
    ]
}

/// Refuses a worker or client whose slot layout differs from the master's (it would poll or
/// write the wrong slots and hang).
fn check_layout(
    reg: &crate::registry::Registry,
    kind: Kind,
    a: &WsArgs,
    master_run: u64,
) -> Result<()> {
    // An earlier master's record (it outlives its run for a minute) says nothing about this one.
    let Some(rec) = reg
        .lookup_result(MASTER)?
        .filter(|r| r.run_id == master_run)
    else {
        return Ok(());
    };
    for (k, v) in layout_fields(kind, a) {
        if let Some(m) = rec.get(k) {
            require(m == v, || {
                format!(
                    "the master runs with --{k} {m} but this process with --{k} {v}: master, \
                     workers and clients need the same --num-workers, --num-clients, --window and --size"
                )
            })?;
        }
    }
    Ok(())
}
