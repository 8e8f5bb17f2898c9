//! HERD: the paper's key-value store. Clients WRITE GET/PUT requests (inlined, over UC) into a
//! request region that a master process creates; worker threads of another process poll their
//! slots, run each pass's requests as one batch against their own MICA-style store
//! ([`crate::kv`]) and answer with linked UD SEND postlists over `--num-ud-qps` QPs.
//!
//! Keys are partitioned over workers by MICA's 16-bit server field (`key.server mod
//! num-workers`): a client sends a key's requests to the worker that owns it, and each worker
//! populates only its own keys. (The original sends each request to a random worker and every
//! worker holds every key, which its README lists as a TODO; with PUTs that would make a GET's
//! answer depend on which worker it reached.)
//!
//! Slot (worker, client, window slot) is the original's `OFFSET(w, c, s)` in 128-byte slots; a
//! request is taken only when its check word says it is there whole ([`wire`]).
//!
//! Roles: `--master 1` (the region and the clients' QPs), `--is-client 0` (the workers,
//! `--num-workers` threads), `--is-client 1` (client threads, `--num-threads`).

mod book;
mod client;
mod wire;
mod worker;

use clap::{CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::request_rpc::{Master, RpcArgs, RpcShape, ROLES};
use crate::framework::{self, require, Benchmark, Family, Output};
use crate::kv::{StoreConfig, Zipf, MAX_BATCH, MAX_VALUE};
use client::Clients;
use worker::Workers;

/// HERD's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "herd",
    mut_arg("verify", |a| a.help("Clients PUT only their own keys and check every GET hit of them against the last version they PUT (exit 4 on a mismatch)")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    mut_arg("postlist", |a| a.help("Workers: most requests run as one MICA batch and answered with one doorbell per port (at most 32)")),
    mut_arg("num_workers", |a| a.default_value("12")),
    mut_arg("num_ud_qps", |a| a.default_value("1")),
    mut_arg("rr_size", |a| a.default_value("16777216")),
    mut_arg("unsig_batch", |a| a.default_value("64").help("One signaled WR every N (UNSIG_BATCH)")),
    mut_arg("queue_depth", |a| a.default_value("128").help("Send queue depth (HRD_Q_DEPTH: small queues keep caches warm)")),
    about = "HERD (ATC'16 rdma_bench): a MICA-style key-value store behind an RDMA RPC. Clients \
WRITE GET/PUT requests into the master's request region over UC; workers poll it, run batches \
against their store and answer with batched UD SENDs"
)]
pub(crate) struct HerdArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub rpc: RpcArgs,
    /// Percentage of requests that are PUTs (the rest are GETs)
    #[arg(long, alias = "update_percentage", default_value_t = 0)]
    pub update_percentage: u32,
    /// Keys in the run (HERD_NUM_KEYS): the integers 0..N hashed to 16 bytes, spread over the
    /// workers
    #[arg(long, alias = "num_keys", default_value_t = 8 << 20, value_parser = crate::units::count::<u64>)]
    pub num_keys: u64,
    /// Buckets of 8 slots in each worker's index (HERD_NUM_BKTS; a power of two)
    #[arg(long, alias = "num_buckets", default_value_t = 2 << 20, value_parser = crate::units::count::<usize>)]
    pub num_buckets: usize,
    /// Bytes of each worker's circular log (HERD_LOG_CAP; a power of two)
    #[arg(long, alias = "log_bytes", default_value_t = 1 << 30, value_parser = crate::units::count::<usize>)]
    pub log_bytes: usize,
    /// Value bytes of every PUT and populated key (HERD_VALUE_SIZE; at most 46)
    #[arg(long, alias = "value_size", default_value_t = 32, value_parser = crate::units::count::<usize>)]
    pub value_size: usize,
    /// Zipf skew of the clients' keys (e.g. 0.99; YCSB's generator) [default: uniform]
    #[arg(long, value_name = "THETA")]
    pub zipf: Option<f64>,
}

impl HerdArgs {
    /// Bytes of the largest request a client WRITEs.
    pub fn max_request(&self) -> usize {
        if self.update_percentage > 0 {
            wire::wire_bytes(wire::put_bytes(self.value_size))
        } else {
            wire::wire_bytes(wire::GET_BYTES)
        }
    }

    /// What every role must agree on, as the master publishes it.
    fn layout_fields(&self) -> [(&'static str, u64); 5] {
        [
            ("num-workers", self.rpc.num_workers as u64),
            ("num-clients", self.rpc.num_clients as u64),
            ("window", self.rpc.window as u64),
            ("num-keys", self.num_keys),
            ("value-size", self.value_size as u64),
        ]
    }

    /// Each worker's store.
    fn store(&self) -> StoreConfig {
        StoreConfig {
            buckets: self.num_buckets,
            log_bytes: self.log_bytes,
            place: self.rpc.common.placement(),
        }
    }
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &HerdArgs) -> Result<()> {
    let r = &a.rpc;
    require(r.num_workers <= 1 << 16 && r.window < 1 << 15, || {
        format!(
            "num-workers ({}) must be at most 65536 and window ({}) at most 32767 (a reply's \
             immediate names both)",
            r.num_workers, r.window
        )
    })?;
    require(a.value_size >= 1 && a.value_size <= MAX_VALUE, || {
        format!(
            "value-size {} is not between 1 and {MAX_VALUE} (a 64-byte op holds a 16-byte key, \
             opcode, length and at most {MAX_VALUE} value bytes)",
            a.value_size
        )
    })?;
    require(a.update_percentage <= 100, || {
        format!("update-percentage {} is above 100", a.update_percentage)
    })?;
    if let Some(theta) = a.zipf {
        require((0.0..1.0).contains(&theta), || {
            format!("zipf {theta} is not in [0, 1)")
        })?;
    }
    require(
        a.num_keys >= r.num_clients as u64 && a.num_keys <= u64::from(u32::MAX),
        || {
            format!(
                "num-keys ({}) must be between num-clients ({}) and 2^32 − 1",
                a.num_keys, r.num_clients
            )
        },
    )?;
    r.check("herd", MAX_BATCH as u32, wire::SLOT_BYTES)?;
    if !r.master && !r.topo.is_client {
        a.store()
            .check()
            .map_err(|e| Error::config(format!("--num-buckets/--log-bytes: {e}")))?;
        // Every worker thread has a store of its own: a run the machine cannot hold is refused
        // here, not ended by the kernel's OOM killer once the stores are filled.
        a.store().check_memory(
            r.num_workers as u64,
            0,
            &std::fs::read_to_string("/proc/meminfo").unwrap_or_default(),
            "--num-workers, --num-buckets or --log-bytes",
        )?;
    }
    require(a.max_request() <= r.queue.max_inline as usize, || {
        format!(
            "a PUT of {} value bytes is a {}-byte request (8-byte check word, 18-byte header, value), \
             above the inline limit of {} bytes: lower --value-size or raise --max-inline",
            a.value_size,
            a.max_request(),
            r.queue.max_inline
        )
    })?;
    crate::framework::check_inline(a.value_size as u64, r.queue.max_inline, "replies")
}

fn entry() -> Result<()> {
    let a = HerdArgs::parse();
    validate(&a)?;
    let reg = a.rpc.common.registry()?;
    let fields = a.layout_fields();
    let shape = RpcShape {
        bench: BENCH.name,
        size: a.max_request() as u64,
        slot_bytes: wire::SLOT_BYTES,
        fields: &fields,
    };
    let common = &a.rpc.common;
    if a.rpc.master {
        let args = &a.rpc;
        Master { shape, args, reg }.run()?;
    } else if a.rpc.topo.is_client {
        let zipf = a
            .zipf
            .map(|theta| Zipf::new(a.num_keys, theta))
            .transpose()
            .map_err(Error::Config)?;
        framework::run(&Clients::new(shape, &a, reg, zipf.as_ref()), common)?;
    } else {
        let workers = Workers::new(shape, &a, reg);
        framework::run(&workers, common)?;
        workers.report();
    }
    Ok(())
}

/// HERD.
pub static BENCH: Benchmark = Benchmark {
    name: "herd",
    family: Family::Application,
    roles: ROLES,
    reports: "worker",
    op: "SEND",
    output: Output::Rate,
    suite: &[
        "--num-workers 1 --num-clients 1 --postlist 1 --window 16 --num-keys 65536 --num-buckets 16384 --log-bytes 8388608 --update-percentage 0",
        "--num-workers 1 --num-clients 1 --postlist 1 --window 16 --num-keys 65536 --num-buckets 16384 --log-bytes 8388608 --update-percentage 5",
        "--num-workers 1 --num-clients 1 --postlist 1 --window 16 --num-keys 65536 --num-buckets 16384 --log-bytes 8388608 --update-percentage 50",
    ],
    command: HerdArgs::command,
    entry,
};

/// The worker that owns `key`.
#[inline(always)]
fn owner(key: crate::kv::Key, workers: usize) -> usize {
    key.server() as usize % workers
}
