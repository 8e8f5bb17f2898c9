//! The workers: each populates its partition of the keys into its own store, then polls its slots
//! of the request region for every client in turn, runs up to `postlist` requests as one MICA
//! batch and answers them with one doorbell per server port.

use std::sync::{Arc, Mutex};

use super::wire::{self, reply_imm};
use super::{owner, HerdArgs};
use crate::error::Result;
use crate::framework::request_rpc::{connect_worker, RpcShape, WorkerLink};
use crate::framework::{publish_done, Lull, Meter, Plan, Role, ThreadCtx};
use crate::hot::Payload;
use crate::kv::{self, Store, MAX_BATCH, MAX_VALUE, RESP_GET_SUCCESS};
use crate::registry::Registry;
use crate::stats::JsonObject;

/// What a worker did, for the end-of-run lines.
#[derive(Debug, Clone, Copy, Default)]
struct WorkerTally {
    kv: kv::Stats,
    batches: u64,
    requests: u64,
    postlist: f64,
}

/// The worker threads of one process; each leaves its tally here for the end-of-run lines.
pub(super) struct Workers<'a> {
    shape: RpcShape<'a>,
    ha: &'a HerdArgs,
    reg: Arc<Registry>,
    tallies: Mutex<Vec<WorkerTally>>,
}

impl<'a> Workers<'a> {
    pub(super) fn new(shape: RpcShape<'a>, ha: &'a HerdArgs, reg: Arc<Registry>) -> Self {
        Workers {
            shape,
            ha,
            reg,
            tallies: Mutex::new(vec![WorkerTally::default(); ha.rpc.num_workers]),
        }
    }

    /// The workers' store and batching figures, all workers together (after the summary).
    pub(super) fn report(self) {
        let tallies = self.tallies.into_inner().unwrap_or_default();
        report(self.ha.rpc.common.json, &tallies);
    }
}

/// A worker thread: its store, its link to the region and the clients, and where it is in
/// every client's slots.
pub(super) struct Worker {
    store: Store,
    link: WorkerLink,
    /// Next slot per client.
    slot: Vec<usize>,
    /// Requests taken per client: the next one is request `served + 1` of the pair (its check
    /// word says so).
    served: Vec<u16>,
    batches: u64,
    done: u64,
}

impl Role for Workers<'_> {
    type Thread = Worker;

    fn plan(&self) -> Plan {
        self.shape
            .worker_plan(&self.ha.rpc, self.ha.value_size as u64)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Worker> {
        let (ha, w) = (self.ha, ctx.t);
        let a = &ha.rpc;
        let mut store = Store::new(ha.store())?;
        let evicted =
            store.populate_where(ha.num_keys, ha.value_size, |k| owner(k, a.num_workers) == w)?;
        let populated = store.stats;
        store.stats = kv::Stats::default();
        println!(
            "main: Worker {w}: populated {} keys ({:.4} % index evictions)",
            populated.puts,
            100.0 * evicted
        );
        let link = connect_worker(self.shape, a, &self.reg, ctx, ha.value_size)?;
        Ok(Worker {
            store,
            link,
            slot: vec![0usize; a.num_clients],
            served: vec![0u16; a.num_clients],
            batches: 0,
            done: 0,
        })
    }

    fn measure(&self, wk: &mut Worker, m: &mut Meter<'_>) -> Result<()> {
        let a = &self.ha.rpc;
        let w = m.thread();
        let Worker {
            store,
            link,
            slot,
            served,
            batches,
            done,
        } = wk;
        let WorkerLink {
            region,
            rpcs,
            dests,
            clients,
            ..
        } = link;
        let layout = a.layout(wire::SLOT_BYTES);
        let blank = kv::Op {
            key: kv::Key(0),
            opcode: 0,
            val_len: 0,
            value: [0; MAX_VALUE],
        };
        let mut ops = [blank; MAX_BATCH];
        let mut resps = [kv::Resp::default(); MAX_BATCH];
        let mut picked = [(0usize, 0usize); MAX_BATCH];
        let postlist = a.postlist as usize;
        let mut next = 0usize;
        let mut lull = Lull::new();
        while m.checkpoint() && *done < a.common.op_limit() {
            let mut n = 0;
            for _ in 0..a.num_clients {
                let c = next;
                next = if next + 1 == a.num_clients {
                    0
                } else {
                    next + 1
                };
                let s = slot[c];
                let off = layout.offset(w, c, s);
                if wire::take(region, off, served[c].wrapping_add(1), &mut ops[n]).is_none() {
                    continue;
                }
                served[c] = served[c].wrapping_add(1);
                slot[c] = if s + 1 == a.window { 0 } else { s + 1 };
                picked[n] = (c, s);
                n += 1;
                if n == postlist {
                    break;
                }
            }
            if n == 0 {
                if lull.empty(m) && lull.started() && clients.all_done(&self.reg)? {
                    break;
                }
                continue;
            }
            lull.busy(m);
            store.batch(&ops[..n], &mut resps[..n]);
            for (&(c, s), r) in picked[..n].iter().zip(&resps[..n]) {
                let (dest, qpn) = dests[c];
                let payload = if r.kind == RESP_GET_SUCCESS {
                    Payload::Bytes(&r.value[..r.len as usize])
                } else {
                    Payload::None
                };
                rpcs[c % a.num_server_ports]
                    .out
                    .push(dest, qpn, Some(reply_imm(w, s)), payload)?;
            }
            for rpc in rpcs.iter_mut() {
                rpc.out.flush()?;
            }
            *batches += 1;
            *done += n as u64;
            m.count(*done);
        }
        m.stop();
        for rpc in rpcs.iter_mut() {
            rpc.out.drain()?;
        }
        Ok(())
    }

    fn finish(&self, wk: Worker, ctx: &ThreadCtx<'_>) -> Result<()> {
        let w = ctx.t;
        let rpcs = &wk.link.rpcs;
        let tally = WorkerTally {
            kv: wk.store.stats,
            batches: wk.batches,
            requests: wk.done,
            postlist: rpcs.iter().map(|r| r.out.average_postlist()).sum::<f64>()
                / rpcs.len() as f64,
        };
        let s = wk.store.stats;
        println!(
            "main: Worker {w}: average batch = {:.2}, average per-port postlist = {:.2}, GET hit rate = {:.4}",
            wk.done as f64 / wk.batches.max(1) as f64,
            tally.postlist,
            if s.gets == 0 { 0.0 } else { (s.gets - s.get_misses) as f64 / s.gets as f64 }
        );
        publish_done(&self.reg, &format!("worker-{w}"))?;
        self.tallies
            .lock()
            .map_err(|_| crate::error::Error::protocol("tally lock poisoned"))?[w] = tally;
        Ok(())
    }
}

/// The workers' store and batching figures, all workers together (and JSON with `--json`).
fn report(json: bool, tallies: &[WorkerTally]) {
    let sum = |f: fn(&WorkerTally) -> u64| tallies.iter().map(f).sum::<u64>();
    let (gets, misses, puts) = (
        sum(|t| t.kv.gets),
        sum(|t| t.kv.get_misses),
        sum(|t| t.kv.puts),
    );
    let (batches, requests) = (sum(|t| t.batches), sum(|t| t.requests));
    let hit_rate = if gets == 0 {
        0.0
    } else {
        (gets - misses) as f64 / gets as f64
    };
    let batch = requests as f64 / batches.max(1) as f64;
    println!(
        "main: Workers: GET hit rate = {hit_rate:.4} ({gets} GETs, {misses} misses), {puts} PUTs, \
         average batch = {batch:.2}, index evictions = {}, log wraps = {}",
        sum(|t| t.kv.index_evictions),
        sum(|t| t.kv.log_wraps)
    );
    if json {
        let o = JsonObject::new()
            .str("bench", "herd")
            .str("role", "worker")
            .bool("kv", true)
            .int("gets", gets)
            .int("get_misses", misses)
            .num("get_hit_rate", hit_rate)
            .int("puts", puts)
            .int("batches", batches)
            .num("avg_batch", batch)
            .int("index_evictions", sum(|t| t.kv.index_evictions))
            .int("log_wraps", sum(|t| t.kv.log_wraps));
        println!("{}", o.finish());
    }
}
