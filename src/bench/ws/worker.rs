//! The workers: poll their slots of the request region for every client in turn, collect up to
//! `postlist` requests, and answer them with one doorbell per server port.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Kind, WsArgs};
use crate::bench::common::Lull;
use crate::bench::echo_payload;
use crate::bench::endpoint::publish_done;
use crate::bench::request_rpc::{self, RpcShape, WorkerLink};
use crate::bench::seq_verify::check_totals;
use crate::control::{stop_requested, stopped_by_signal};
use crate::error::Result;
use crate::hot::Payload;
use crate::registry::Registry;
use crate::stats::Counters;

pub(super) fn run(kind: Kind, shape: RpcShape<'_>, wa: &WsArgs, reg: &Arc<Registry>) -> Result<()> {
    let a = &wa.rpc;
    let seq = AtomicU64::new(0);
    request_rpc::run_workers(shape, a, shape.size, |w, counters| {
        worker(kind, shape, wa, reg, &seq, w, counters)
    })?;
    if kind == Kind::Sequencer && a.common.verify && stopped_by_signal() {
        println!("main: verify skipped: stopped by a signal before every client could report");
    } else if kind == Kind::Sequencer && a.common.verify {
        let names: Vec<String> = (0..a.num_clients).map(|c| format!("client-{c}")).collect();
        let line = check_totals(
            reg,
            &names,
            &[reg.run_id()],
            seq.load(Ordering::Acquire),
            std::time::Duration::from_secs(10),
        )?;
        println!("{line}");
    }
    Ok(())
}

fn worker(
    kind: Kind,
    shape: RpcShape<'_>,
    wa: &WsArgs,
    reg: &Arc<Registry>,
    seq: &AtomicU64,
    w: usize,
    counters: &Counters,
) -> Result<()> {
    let a = &wa.rpc;
    let payload = wa.payload(kind);
    let WorkerLink {
        region,
        mut rpcs,
        dests,
        mut clients,
        watch: _master,
    } = request_rpc::connect_worker(shape, a, reg, w, payload)?;
    let me = format!("worker-{w}");
    let layout = wa.layout(kind);
    let mut slot = vec![0usize; a.num_clients];
    // Requests served per client: the client numbers its requests k = 1, 2, … and sends request
    // k to worker (k − 1) mod num-workers, so the next one we expect is known exactly.
    let mut served = vec![0u64; a.num_clients];
    let mut picked: Vec<usize> = Vec::with_capacity(a.postlist as usize);
    let mut bodies = vec![[0u8; 64]; a.postlist as usize];
    let tag_at = payload - 8;
    let (mut next, mut ops) = (0usize, 0u64);
    let mut lull = Lull::new(w);
    while !stop_requested() && ops < a.common.op_limit() {
        picked.clear();
        for _ in 0..a.num_clients {
            let c = next;
            next = if next + 1 == a.num_clients {
                0
            } else {
                next + 1
            };
            let off = layout.offset(w, c, slot[c]);
            // A request is there once its tag word holds exactly the tag we expect next from
            // this client: "non-zero" is not enough, a WRITE's bytes land in no guaranteed
            // order (Soft-RoCE copies them with memcpy), so a half-written tag is non-zero.
            let want = echo_payload::tag(c, served[c] * a.num_workers as u64 + w as u64 + 1);
            if region.load_u64(off + tag_at) != want {
                continue;
            }
            // ws-echo: every word of the request carries the tag; wait for all of them.
            if kind == Kind::Echo
                && (0..tag_at)
                    .step_by(8)
                    .any(|k| region.load_u64(off + k) != want)
            {
                continue;
            }
            if kind == Kind::Echo {
                region.read(off, &mut bodies[picked.len()][..payload]);
            }
            region.store_u64(off + tag_at, 0);
            served[c] += 1;
            slot[c] = if slot[c] + 1 == a.window {
                0
            } else {
                slot[c] + 1
            };
            picked.push(c);
            if picked.len() == a.postlist as usize {
                break;
            }
        }
        if picked.is_empty() {
            if lull.empty(counters) && lull.started() && clients.all_done(reg)? {
                break;
            }
            continue;
        }
        lull.busy(counters);
        let n = picked.len();
        let base = match kind {
            Kind::Sequencer => seq.fetch_add(n as u64, Ordering::Relaxed),
            Kind::Echo => 0,
        };
        for (k, &c) in picked.iter().enumerate() {
            let (dest, qpn) = dests[c];
            let out = &mut rpcs[c % a.num_server_ports].out;
            match kind {
                Kind::Sequencer => {
                    out.push(dest, qpn, Some(w as u32), Payload::U64(base + k as u64))?
                }
                Kind::Echo => out.push(dest, qpn, None, Payload::Bytes(&bodies[k][..payload]))?,
            }
        }
        for rpc in &mut rpcs {
            rpc.out.flush()?;
        }
        ops += n as u64;
        counters.set(w, ops);
    }
    lull.end(counters);
    for rpc in &mut rpcs {
        rpc.out.drain()?;
    }
    println!(
        "main: Worker {w}: average postlist = {:.2}",
        rpcs[0].out.average_postlist()
    );
    publish_done(reg, &me)
}
