//! The workers: poll their slots of the request region for every client in turn, collect up to
//! `postlist` requests, and answer them with one doorbell per server port.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::master::bench_name;
use super::{Kind, WsArgs, MASTER};
use crate::bench::common::Lull;
use crate::bench::echo_payload;
use crate::bench::endpoint::publish_done;
use crate::bench::runner::{run_threads, Role};
use crate::bench::seq_verify::check_totals;
use crate::bench::ud_rpc::{ClientSet, UdRpc, UdRpcSpec};
use crate::control::{stop_requested, stopped_by_signal};
use crate::error::Result;
use crate::hot::{DestId, Payload, RequestRegion};
use crate::registry::Registry;
use crate::stats::{Counters, RunInfo};

pub(super) fn run(kind: Kind, a: &WsArgs, reg: &Arc<Registry>) -> Result<()> {
    let info = RunInfo {
        bench: bench_name(kind),
        role: "Worker",
        op: "SEND",
        size: a.payload(kind) as u64,
        postlist: u64::from(a.postlist),
        first_id: 0,
        json: a.common.json,
    };
    println!("main: Using {} threads", a.num_workers);
    let seq = AtomicU64::new(0);
    run_threads(
        info,
        Role::Counting,
        a.num_workers,
        &a.common,
        |w, counters| worker(kind, a, reg, &seq, w, counters),
    )?;
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
    a: &WsArgs,
    reg: &Arc<Registry>,
    seq: &AtomicU64,
    w: usize,
    counters: &Counters,
) -> Result<()> {
    let master = reg.find_ready(MASTER, a.common.wait())?;
    let _watch = reg.watch(MASTER, master.run_id, MASTER);
    super::check_layout(reg, kind, a, master.run_id)?;
    let region = RequestRegion::attach(a.shm_key, a.rr_size)?;
    let layout = a.layout(kind);
    let payload = a.payload(kind);
    let mut rpcs = Vec::with_capacity(a.num_server_ports);
    for p in 0..a.num_server_ports {
        let port = a.common.open_port(a.common.port_index + p)?;
        let spec = UdRpcSpec {
            qps: a.num_ud_qps,
            queue_depth: a.queue.queue_depth,
            recv_slots: 1,
            recv_payload: 0,
            max_postlist: a.postlist as usize,
            send_payload: payload,
            max_inline: a.queue.max_inline,
        };
        rpcs.push(UdRpc::new(
            &port,
            spec,
            a.common.placement(),
            a.queue.counter(),
        )?);
    }
    let me = format!("worker-{w}");
    reg.announce(&me, &rpcs[0].info())?;
    // Every client's UD QP, and an AH to it from the port that serves it.
    let mut dests: Vec<(DestId, u32)> = Vec::with_capacity(a.num_clients);
    let mut runs = Vec::with_capacity(a.num_clients);
    for c in 0..a.num_clients {
        let e = reg.find_ready(&format!("client-dgram-{c}"), a.common.wait())?;
        let dest = rpcs[c % a.num_server_ports].dest_to(&e.info)?;
        dests.push((dest, e.info.qpn));
        runs.push(e.run_id);
    }
    let mut clients = ClientSet::known(
        (0..a.num_clients).map(|c| format!("client-{c}")).collect(),
        runs,
    );
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
