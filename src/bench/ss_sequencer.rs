//! ss-sequencer (Spec-S0): a 64-bit sequencer over UD only.
//!
//! Client `C` sends header-only SEND_WITH_IMMs (the immediate: the upper 32 bits of the counter
//! as the client last saw them) to server thread `C mod num-server-threads`, keeping `postlist`
//! requests outstanding. A server thread polls up to `postlist` requests, takes one
//! fetch-and-add on the process's counter for the whole batch, reposts the RECVs with one
//! `ibv_post_recv`, and answers with one linked postlist of SEND_WITH_IMMs (immediate: the
//! value's lower 32 bits; a full 8-byte SEND when the client's upper half is stale), rotating
//! over `num-ud-qps` UD QPs. Address handles are made on a client's first request and cached.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::Parser;

use super::common::{require, CommonArgs, QueueArgs, Topology};
use super::endpoint::publish_done;
use super::runner::{run_threads, Role};
use super::seq_verify::{check_totals, SeqTracker};
use super::ud_rpc::{ClientSet, UdRpc, UdRpcSpec};
use crate::control::stop_requested;
use crate::error::{Error, Result};
use crate::hot::{Payload, PollTimeout};
use crate::registry::Registry;
use crate::stats::{Counters, RunInfo};
use crate::verbs::WorkCompletion;

/// Empty polls after which a server looks whether its clients have left.
const LULL_POLLS: u32 = 4096;

/// ss-sequencer's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ss-sequencer",
    version,
    args_override_self = true,
    about = "Spec-S0, the paper's UD-only sequencer (ATC'16 rdma_bench): clients send header-only \
SEND_WITH_IMMs, server threads answer batches with one fetch-and-add and one doorbell"
)]
pub struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// Clients: requests kept outstanding. Servers: requests polled, and replies sent with one
    /// doorbell, at most
    #[arg(long, default_value_t = 16)]
    pub postlist: u32,
    /// Server threads (NUM_SERVER_THREADS); clients need it to pick their server
    #[arg(long, alias = "num_server_threads", default_value_t = 10)]
    pub num_server_threads: usize,
    /// UD QPs each server thread replies over, round-robin per batch (NUM_UD_QPS)
    #[arg(long, alias = "num_ud_qps", default_value_t = 3)]
    pub num_ud_qps: usize,
    /// Client threads the servers' RECV queues are sized for (MAX_NUM_CLIENTS)
    #[arg(long, alias = "max_num_clients", default_value_t = 70)]
    pub max_num_clients: usize,
    /// 1: one doorbell per reply (DISABLE_SERVER_POSTLIST)
    #[arg(long, alias = "disable_server_postlist", default_value = "0", value_parser = super::common::flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub disable_server_postlist: bool,
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

/// The checks that refuse a run before anything is made.
pub fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    require(a.num_server_threads >= 1, || {
        "num-server-threads must be at least 1".into()
    })?;
    require(a.num_ud_qps >= 1, || "num-ud-qps must be at least 1".into())?;
    require(a.max_num_clients >= 1, || {
        "max-num-clients must be at least 1".into()
    })?;
    a.queue.check(a.postlist, a.max_postlist)?;
    // Every client of a server thread keeps `postlist` requests outstanding; UD drops a request
    // that finds no RECV, so the server's RECV queue must hold them all.
    let per_server = a.max_num_clients.div_ceil(a.num_server_threads);
    let need = per_server as u64 * u64::from(a.postlist);
    require(need <= u64::from(a.queue.queue_depth), || {
        format!(
            "the servers' RECV queue (queue-depth {}) is smaller than clients per server thread \
             ({per_server} = ceil(max-num-clients {} / num-server-threads {})) × postlist {}",
            a.queue.queue_depth, a.max_num_clients, a.num_server_threads, a.postlist
        )
    })?;
    if a.topo.is_client {
        let last = a.topo.first_id() + a.topo.threads() - 1;
        require(last < a.max_num_clients, || {
            format!(
                "client {last} (machine-id {} × num-threads {} + t) is beyond max-num-clients {}",
                a.topo.machine_id,
                a.topo.threads(),
                a.max_num_clients
            )
        })?;
    } else {
        require(a.topo.num_threads.is_none(), || {
            "the server runs --num-server-threads threads; --num-threads is for clients".into()
        })?;
    }
    Ok(())
}

/// Runs ss-sequencer.
pub fn run(a: Args) -> Result<()> {
    validate(&a)?;
    let threads = if a.topo.is_client {
        a.topo.threads()
    } else {
        a.num_server_threads
    };
    let first_id = a.topo.first_id();
    let info = RunInfo {
        bench: "ss-sequencer",
        role: a.topo.role_name(),
        op: if a.topo.is_client { "SEQ" } else { "SEQ-REPLY" },
        size: 8,
        postlist: u64::from(a.postlist),
        first_id,
        json: a.common.json,
    };
    let reg = a.common.registry()?;
    println!("main: Using {threads} threads");
    let counter = AtomicU64::new(0);
    run_threads(info, Role::Counting, threads, &a.common, |t, counters| {
        if a.topo.is_client {
            client(&a, &reg, first_id + t, t, counters)
        } else {
            server(&a, &reg, &counter, t, counters)
        }
    })?;
    if !a.topo.is_client && a.common.verify {
        let names: Vec<String> = (0..a.max_num_clients)
            .map(|c| format!("client-{c}"))
            .collect();
        let present = ClientSet::new(names).present(&reg)?;
        let line = check_totals(
            &reg,
            &present,
            &[reg.run_id()],
            counter.load(Ordering::Acquire),
            std::time::Duration::from_secs(10),
        )?;
        println!("{line}");
    }
    Ok(())
}

fn port_for(a: &Args, server: usize) -> Result<crate::verbs::Port> {
    a.common
        .open_port(a.common.port_index + if a.topo.dual_port { server % 2 } else { 0 })
}

fn server(
    a: &Args,
    reg: &Arc<Registry>,
    seq: &AtomicU64,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let port = port_for(a, t)?;
    let spec = UdRpcSpec {
        qps: a.num_ud_qps,
        queue_depth: a.queue.queue_depth,
        recv_slots: a.queue.queue_depth as usize,
        recv_payload: 0,
        max_postlist: a.postlist as usize,
        send_payload: 8,
        max_inline: a.queue.max_inline,
    };
    let mut rpc = UdRpc::new(&port, spec, a.common.placement(), a.queue.counter())?;
    rpc.fill()?;
    let me = format!("server-{t}");
    reg.announce(&me, &rpc.info())?;
    let mut clients = ClientSet::new(
        (t..a.max_num_clients)
            .step_by(a.num_server_threads)
            .map(|c| format!("client-{c}"))
            .collect(),
    );
    let mut wcs = vec![WorkCompletion::default(); a.postlist as usize];
    let (mut ops, mut idle, mut started) = (0u64, 0u32, false);
    while !stop_requested() && ops < a.common.op_limit() {
        let n = rpc.recv_cq.poll(&mut wcs)?;
        if n == 0 {
            idle = idle.wrapping_add(1);
            if idle == LULL_POLLS && started {
                counters.stop(t);
            }
            if idle % LULL_POLLS == 0 && started && clients.all_done(reg)? {
                break;
            }
            continue;
        }
        if !started {
            counters.start(t);
            started = true;
        } else if idle >= LULL_POLLS {
            counters.resume(t);
        }
        idle = 0;
        let base = seq.fetch_add(n as u64, Ordering::Relaxed);
        for (i, wc) in wcs[..n].iter().enumerate() {
            wc.result()?;
            let dest = rpc
                .out
                .dest_of(wc, &rpc.recv_mr, rpc.ring.slot_offset(wc.wr_id()))?;
            let v = base + i as u64;
            // The client guessed the upper half right: the immediate alone carries the value.
            if wc.imm_data() == Some((v >> 32) as u32) {
                rpc.out
                    .push(dest, wc.src_qp(), Some(v as u32), Payload::None)?;
            } else {
                rpc.out.push(dest, wc.src_qp(), None, Payload::U64(v))?;
            }
            if a.disable_server_postlist {
                rpc.out.flush()?;
            }
        }
        rpc.repost(n)?;
        rpc.out.flush()?;
        ops += n as u64;
        counters.set(t, ops);
    }
    if idle < LULL_POLLS && started {
        counters.stop(t);
    }
    rpc.out.drain()?;
    println!(
        "main: Server {t}: average postlist = {:.2}",
        rpc.out.average_postlist()
    );
    publish_done(reg, &me)
}

fn client(a: &Args, reg: &Arc<Registry>, id: usize, t: usize, counters: &Counters) -> Result<()> {
    let server = id % a.num_server_threads;
    let port = port_for(a, server)?;
    let window = a.postlist as usize;
    let spec = UdRpcSpec {
        qps: 1,
        queue_depth: a.queue.queue_depth,
        recv_slots: window,
        recv_payload: 8,
        max_postlist: window,
        send_payload: 0,
        max_inline: a.queue.max_inline,
    };
    let mut rpc = UdRpc::new(&port, spec, a.common.placement(), a.queue.counter())?;
    rpc.fill()?;
    let me = format!("client-{id}");
    let peer = format!("server-{server}");
    reg.announce(&me, &rpc.info())?;
    let remote = reg.find_ready(&peer, a.common.wait())?;
    let _watch = reg.watch(&peer, remote.run_id, &peer);
    let dest = rpc.dest_to(&remote.info)?;
    let qpn = remote.info.qpn;
    let mut track = SeqTracker::default();
    // The upper 32 bits of the counter as last seen (Spec-S0's guess, sent as the immediate).
    let mut hi = 0u64;
    for _ in 0..window {
        rpc.out.push(dest, qpn, Some(0), Payload::None)?;
    }
    rpc.out.flush()?;
    counters.start(t);
    let mut wcs = vec![WorkCompletion::default(); window];
    let mut ops = 0u64;
    let limit = a.common.op_limit();
    while !stop_requested() && ops < limit {
        let n = rpc.recv_cq.poll(&mut wcs)?;
        if n == 0 {
            continue;
        }
        for wc in &wcs[..n] {
            wc.result()?;
            take_value(&mut hi, &mut track, a.common.verify, &rpc, wc);
        }
        rpc.repost(n)?;
        let guess = (hi >> 32) as u32;
        for _ in 0..n {
            rpc.out.push(dest, qpn, Some(guess), Payload::None)?;
        }
        rpc.out.flush()?;
        ops += n as u64;
        counters.set(t, ops);
    }
    counters.stop(t);
    // The replies to the requests still out: the server answers every request it received.
    rpc.drain_replies(
        window,
        PollTimeout(std::time::Duration::from_secs(5)),
        |rpc, wc| {
            take_value(&mut hi, &mut track, a.common.verify, rpc, wc);
            Ok(())
        },
    )?;
    rpc.out.drain()?;
    if a.common.verify {
        track.check(&me)?;
        reg.publish_result(
            &me,
            &[
                ("server_run", remote.run_id),
                ("count", track.count),
                ("hash", track.hash),
            ],
        )?;
        println!("main: Client {id}: verify ok: {} values, each above the previous one from its reply QP", track.count);
    }
    publish_done(reg, &me).map_err(|e| Error::protocol(format!("{me}: {e}")))
}

/// The value a reply carries: the immediate under the upper half last seen, or (when the server
/// found that guess stale) the full 8-byte SEND, which also updates the guess.
#[inline(always)]
fn take_value(
    hi: &mut u64,
    track: &mut SeqTracker,
    verify: bool,
    rpc: &UdRpc,
    wc: &WorkCompletion,
) -> u64 {
    let v = match wc.imm_data() {
        Some(lo) => *hi | u64::from(lo),
        None => {
            let v = rpc.recv_mr.load_u64(rpc.payload_offset(wc));
            *hi = v & !0xffff_ffff;
            v
        }
    };
    if verify {
        track.record(wc.src_qp(), v);
    }
    v
}
