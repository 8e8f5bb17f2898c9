//! The clients: WRITE requests (inlined) into the master's region, `window` outstanding, round
//! robin over the workers, and take the replies on a UD QP.

use std::sync::Arc;

use super::master::bench_name;
use super::{Kind, WsArgs};
use crate::bench::common::all_connected;
use crate::bench::echo_payload::{self, Outstanding};
use crate::bench::endpoint::{publish_done, Endpoint, EndpointSpec};
use crate::bench::runner::{run_threads, Role};
use crate::bench::seq_verify::{report_client, SeqTracker};
use crate::bench::ud_rpc::{drain_timeout, settle, UdRpc, UdRpcSpec};
use crate::control::stop_requested;
use crate::error::{Error, Result};
use crate::hot::{Op, PollTimeout, Postlist, Remote, SendBatch, SendSpec};
use crate::registry::Registry;
use crate::stats::{Counters, RunInfo};
use crate::verbs::{Access, QpType, WorkCompletion};

pub(super) fn run(kind: Kind, a: &WsArgs, reg: &Arc<Registry>) -> Result<()> {
    let first_id = a.topo.first_id();
    let info = RunInfo {
        bench: bench_name(kind),
        role: "Client",
        op: "WRITE",
        size: a.payload(kind) as u64,
        postlist: 1,
        first_id,
        json: a.common.json,
    };
    println!("main: Using {} threads", a.topo.threads());
    run_threads(
        info,
        Role::Counting,
        a.topo.threads(),
        &a.common,
        |t, counters| client(kind, a, reg, first_id + t, t, counters),
    )?;
    Ok(())
}

/// What a client checks in the replies it takes.
struct Checker {
    kind: Kind,
    verify: bool,
    seq: SeqTracker,
    out: Outstanding,
    bad: Option<String>,
    body: [u8; 64],
}

impl Checker {
    #[inline]
    fn take(&mut self, rpc: &UdRpc, wc: &WorkCompletion, size: usize) {
        if !self.verify {
            return;
        }
        let off = rpc.payload_offset(wc);
        match self.kind {
            Kind::Sequencer => self.seq.record(wc.src_qp(), rpc.recv_mr.load_u64(off)),
            Kind::Echo => {
                rpc.recv_mr.read(off, &mut self.body[..size]);
                let tag = echo_payload::tag_in(&self.body[..size]);
                if !tag.is_some_and(|t| self.out.answer(t)) && self.bad.is_none() {
                    self.bad = Some(format!(
                        "a reply did not carry an outstanding request back (bytes {:02x?})",
                        &self.body[..size]
                    ));
                }
            }
        }
    }
}

fn client(
    kind: Kind,
    a: &WsArgs,
    reg: &Arc<Registry>,
    id: usize,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let port = a
        .common
        .open_port(a.common.port_index + id % a.num_client_ports)?;
    let payload = a.payload(kind);
    let spec = EndpointSpec {
        qp_type: if a.use_uc { QpType::Uc } else { QpType::Rc },
        queue_depth: a.queue.queue_depth,
        recv_depth: 1,
        max_inline: a.queue.max_inline,
        buf_size: 4096,
        fill: 0,
        ex: false,
        access: Some(Access::LOCAL_WRITE),
    };
    let me = format!("client-{id}");
    let master = format!("master-{}-{id}", id % a.num_server_ports);
    let (mut ep, remote) = Endpoint::meet(
        &port,
        spec,
        a.common.placement(),
        reg,
        &format!("client-conn-{id}"),
        &master,
        a.common.wait(),
    )?;
    super::check_layout(reg, kind, a, remote.run_id)?;
    let rspec = UdRpcSpec {
        qps: 1,
        queue_depth: a.queue.queue_depth,
        recv_slots: a.window,
        recv_payload: payload,
        max_postlist: 1,
        send_payload: 0,
        max_inline: a.queue.max_inline,
    };
    let mut rpc = UdRpc::new(&port, rspec, a.common.placement(), a.queue.counter())?;
    rpc.fill()?;
    reg.announce(&format!("client-dgram-{id}"), &rpc.info())?;
    let workers = reg.find_ready("worker-0", a.common.wait())?;
    let _watch = reg.watch("worker-0", workers.run_id, "worker-0");
    let (qp, mr) = ep.parts();
    let send = SendSpec {
        op: Op::Write,
        postlist: 1,
        size: payload as u32,
        stride: 0,
        local_offset: 0,
        remote_offset: 0,
        inline: true,
    };
    let target = Remote::of(&remote.info);
    let mut batch = SendBatch::new(qp, mr, send, Some(target))?;
    let mut sig = a.queue.counter();
    let timeout = PollTimeout::default();
    let layout = a.layout(kind);
    let mut slot = vec![0usize; a.num_workers];
    let (mut worker, mut sent) = (0usize, 0u64);
    let mut check = Checker {
        kind,
        verify: a.common.verify,
        seq: SeqTracker::default(),
        out: Outstanding::new(a.window),
        bad: None,
        body: [0; 64],
    };
    // One request to the next worker in turn: its payload into our buffer (the WRITE is inlined,
    // so the buffer is free again once posted), then the WRITE into that worker's next slot.
    let mut request = |batch: &mut SendBatch,
                       qp: &mut crate::verbs::QueuePair,
                       check: &mut Checker|
     -> Result<()> {
        sent += 1;
        let tag = echo_payload::tag(id, sent);
        // Every word of the request is its tag (echo_payload's layout; payloads are whole words).
        for k in (0..payload).step_by(8) {
            mr.store_u64(k, tag);
        }
        if kind == Kind::Echo && check.verify {
            check.out.add(tag);
        }
        batch.retarget(0, Op::Write, layout.offset(worker, id, slot[worker]) as u64)?;
        slot[worker] = if slot[worker] + 1 == a.window {
            0
        } else {
            slot[worker] + 1
        };
        worker = if worker + 1 == a.num_workers {
            0
        } else {
            worker + 1
        };
        batch.post_selective(qp, &mut sig, timeout)
    };
    all_connected(counters)?;
    for _ in 0..a.window {
        request(&mut batch, qp, &mut check)?;
    }
    counters.start(t);
    let mut wcs = vec![WorkCompletion::default(); a.window];
    let mut ops = 0u64;
    while !stop_requested() && ops < a.common.op_limit() {
        let n = rpc.recv_cq.poll(&mut wcs)?;
        if n == 0 {
            continue;
        }
        for wc in &wcs[..n] {
            wc.result()?;
            check.take(&rpc, wc, payload);
        }
        rpc.repost(&wcs[..n])?;
        for _ in 0..n {
            request(&mut batch, qp, &mut check)?;
        }
        ops += n as u64;
        counters.set(t, ops);
    }
    counters.stop(t);
    let drained = rpc.drain_replies(a.window, drain_timeout(), |rpc, wc| {
        check.take(rpc, wc, payload);
        Ok(())
    });
    if !settle(drained, &me)? {
        return publish_done(reg, &me);
    }
    sig.drain(qp.send_cq(), timeout)?;
    if a.common.verify {
        if let Some(bad) = &check.bad {
            return Err(Error::Verify(format!("{me}: {bad}")));
        }
        match kind {
            Kind::Sequencer => {
                report_client(reg, &me, id, &check.seq, workers.run_id)?;
            }
            Kind::Echo => println!(
                "main: Client {id}: verify ok: {} replies, each carrying an outstanding request's payload back",
                ops + a.window as u64
            ),
        }
    }
    publish_done(reg, &me)
}
