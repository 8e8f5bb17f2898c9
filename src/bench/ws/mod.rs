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

use clap::{CommandFactory, Parser};

use crate::error::Result;
use crate::framework::request_rpc::{Master, RpcArgs, RpcShape, ROLES};
use crate::framework::{self, require, Benchmark, Family, Output};
use crate::hot::SlotLayout;

/// Which of the two benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Replies carry the next value of the workers' shared counter.
    Sequencer,
    /// Replies carry the request's payload back.
    Echo,
}

/// Flags of ws-sequencer and ws-echo.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct WsArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub rpc: RpcArgs,
    /// Request bytes (ws-echo; ws-sequencer's requests are 8 bytes)
    #[arg(long, default_value_t = 8, value_parser = crate::units::count::<usize>)]
    pub size: usize,
    /// Largest postlist accepted (MAX_POSTLIST)
    #[arg(long, alias = "max_postlist", default_value_t = 128, value_parser = crate::units::count::<u32>)]
    pub max_postlist: u32,
}

/// ws-sequencer's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ws-sequencer",
    mut_arg("verify", |a| a.help("Check the sequence once the run ends: each client sees values increase per reply QP; the server checks that no value was handed out twice or lost (counts and a hash)")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "The paper's WRITE/SEND sequencer (ATC'16 rdma_bench): clients WRITE 8-byte requests \
into the master's request region, workers poll it and reply with batched UD SEND_WITH_IMMs"
)]
pub(crate) struct SequencerArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ws: WsArgs,
}

/// ws-echo's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ws-echo",
    mut_arg("verify", |a| a.help("Check that every reply carries one of the client's outstanding requests back, byte for byte, each once")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    mut_arg("size", |a| a.default_value("24").help("Request (and reply) bytes: a multiple of 8, at most 56")),
    mut_arg("num_workers", |a| a.default_value("5")),
    mut_arg("num_clients", |a| a.default_value("64")),
    mut_arg("unsig_batch", |a| a.default_value("256").help("One signaled WR every N (selective signaling)")),
    mut_arg("queue_depth", |a| a.default_value("1024").help("Send queue depth (the original's HRD_Q_DEPTH)")),
    about = "The paper's WRITE-request/SEND-reply echo (ATC'16 rdma_bench): clients WRITE requests \
into the master's request region, workers echo them back with batched UD SENDs"
)]
pub(crate) struct EchoArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub ws: WsArgs,
}

fn sequencer_main() -> Result<()> {
    run(Kind::Sequencer, SequencerArgs::parse().ws)
}

fn echo_main() -> Result<()> {
    run(Kind::Echo, EchoArgs::parse().ws)
}

impl WsArgs {
    /// Bytes a request occupies (and a reply carries).
    pub fn payload(&self, kind: Kind) -> usize {
        match kind {
            Kind::Sequencer => 8,
            Kind::Echo => self.size,
        }
    }
    /// Bytes per request slot.
    fn slot_bytes(kind: Kind) -> usize {
        match kind {
            Kind::Sequencer => 8,
            Kind::Echo => 64,
        }
    }
    /// The request region's slot layout.
    pub fn layout(&self, kind: Kind) -> SlotLayout {
        self.rpc.layout(Self::slot_bytes(kind))
    }
    /// What every role must agree on, as the master publishes it.
    fn layout_fields(&self, kind: Kind) -> [(&'static str, u64); 4] {
        [
            ("num-workers", self.rpc.num_workers as u64),
            ("num-clients", self.rpc.num_clients as u64),
            ("window", self.rpc.window as u64),
            ("size", self.payload(kind) as u64),
        ]
    }
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(kind: Kind, a: &WsArgs) -> Result<()> {
    a.rpc.check(
        master::bench_name(kind),
        a.max_postlist,
        WsArgs::slot_bytes(kind),
    )?;
    match kind {
        Kind::Sequencer => require(a.size == 8, || {
            format!("ws-sequencer's requests are 8 bytes, not {}", a.size)
        })?,
        Kind::Echo => require(
            a.size >= 8 && a.size <= 56 && a.size.is_multiple_of(8),
            || {
                format!(
                "size {} must be a multiple of 8 between 8 and 56 (a request and its tag fill one 64-byte slot)",
                a.size
            )
            },
        )?,
    }
    crate::framework::check_inline(
        a.payload(kind) as u64,
        a.rpc.queue.max_inline,
        "requests and replies",
    )
}

fn run(kind: Kind, a: WsArgs) -> Result<()> {
    validate(kind, &a)?;
    let reg = a.rpc.common.registry()?;
    let fields = a.layout_fields(kind);
    let shape = RpcShape {
        bench: master::bench_name(kind),
        size: a.payload(kind) as u64,
        slot_bytes: WsArgs::slot_bytes(kind),
        fields: &fields,
    };
    let common = &a.rpc.common;
    if a.rpc.master {
        let args = &a.rpc;
        Master { shape, args, reg }.run()?;
    } else if a.rpc.topo.is_client {
        framework::run(&client::Clients::new(kind, shape, &a, reg), common)?;
    } else {
        let workers = worker::Workers::new(kind, shape, &a, reg);
        framework::run(&workers, common)?;
        workers.verify_totals()?;
    }
    Ok(())
}

/// ws-sequencer.
pub static SEQUENCER: Benchmark = Benchmark {
    name: "ws-sequencer",
    family: Family::Application,
    roles: ROLES,
    reports: "worker",
    op: "SEND",
    output: Output::Rate,
    suite: &["--num-workers 1 --num-clients 1 --postlist 1 --window 32"],
    command: SequencerArgs::command,
    entry: sequencer_main,
};

/// ws-echo.
pub static ECHO: Benchmark = Benchmark {
    name: "ws-echo",
    family: Family::Application,
    roles: ROLES,
    reports: "worker",
    op: "SEND",
    output: Output::Rate,
    suite: &["--num-workers 1 --num-clients 1 --postlist 1 --window 32 --size 24"],
    command: EchoArgs::command,
    entry: echo_main,
};
