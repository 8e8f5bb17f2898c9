//! The workers: each populates its partition of the keys into its own store, then polls its slots
//! of the request region for every client in turn, runs up to `postlist` requests as one MICA
//! batch and answers them with one doorbell per server port.

use std::sync::{Arc, Mutex};

use super::wire::{self, reply_imm};
use super::{owner, HerdArgs};
use crate::bench::common::Lull;
use crate::bench::endpoint::publish_done;
use crate::bench::request_rpc::{self, RpcShape, WorkerLink};
use crate::control::stop_requested;
use crate::error::Result;
use crate::hot::Payload;
use crate::kv::{self, Store, MAX_BATCH, MAX_VALUE, RESP_GET_SUCCESS};
use crate::registry::Registry;
use crate::stats::{Counters, JsonObject};

/// What a worker did, for the end-of-run lines.
#[derive(Debug, Clone, Copy, Default)]
struct WorkerTally {
    kv: kv::Stats,
    batches: u64,
    requests: u64,
    postlist: f64,
}

pub(super) fn run(shape: RpcShape<'_>, ha: &HerdArgs, reg: &Arc<Registry>) -> Result<()> {
    let a = &ha.rpc;
    let tallies = Mutex::new(vec![WorkerTally::default(); a.num_workers]);
    request_rpc::run_workers(shape, a, ha.value_size as u64, |w, counters| {
        let t = worker(shape, ha, reg, w, counters)?;
        tallies
            .lock()
            .map_err(|_| crate::error::Error::protocol("tally lock poisoned"))?[w] = t;
        Ok(())
    })?;
    let tallies = tallies.into_inner().unwrap_or_default();
    report(a.common.json, &tallies);
    Ok(())
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

fn worker(
    shape: RpcShape<'_>,
    ha: &HerdArgs,
    reg: &Arc<Registry>,
    w: usize,
    counters: &Counters,
) -> Result<WorkerTally> {
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
    let WorkerLink {
        region,
        mut rpcs,
        dests,
        mut clients,
        watch: _master,
    } = request_rpc::connect_worker(shape, a, reg, w, ha.value_size)?;
    let me = format!("worker-{w}");
    let layout = a.layout(wire::SLOT_BYTES);
    let mut slot = vec![0usize; a.num_clients];
    // Requests taken per client: the next one is request `served + 1` of the pair (its check
    // word says so).
    let mut served = vec![0u16; a.num_clients];
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
    let (mut next, mut done, mut batches) = (0usize, 0u64, 0u64);
    let mut lull = Lull::new(w);
    while !stop_requested() && done < a.common.op_limit() {
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
            if wire::take(&region, off, served[c].wrapping_add(1), &mut ops[n]).is_none() {
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
            if lull.empty(counters) && lull.started() && clients.all_done(reg)? {
                break;
            }
            continue;
        }
        lull.busy(counters);
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
        for rpc in &mut rpcs {
            rpc.out.flush()?;
        }
        batches += 1;
        done += n as u64;
        counters.set(w, done);
    }
    lull.end(counters);
    for rpc in &mut rpcs {
        rpc.out.drain()?;
    }
    let tally = WorkerTally {
        kv: store.stats,
        batches,
        requests: done,
        postlist: rpcs.iter().map(|r| r.out.average_postlist()).sum::<f64>() / rpcs.len() as f64,
    };
    let s = store.stats;
    println!(
        "main: Worker {w}: average batch = {:.2}, average per-port postlist = {:.2}, GET hit rate = {:.4}",
        done as f64 / batches.max(1) as f64,
        tally.postlist,
        if s.gets == 0 { 0.0 } else { (s.gets - s.get_misses) as f64 / s.gets as f64 }
    );
    publish_done(reg, &me)?;
    Ok(tally)
}
