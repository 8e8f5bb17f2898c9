//! The clients: WRITE requests (inlined) into the master's region, `window` outstanding, round
//! robin over the workers, and take the replies on a UD QP.

use std::sync::Arc;

use super::{Kind, WsArgs};
use crate::bench::echo_payload::{self, Outstanding};
use crate::bench::endpoint::publish_done;
use crate::bench::request_rpc::{self, ClientLink, RpcShape, WindowClient};
use crate::bench::seq_verify::{report_client, SeqTracker};
use crate::bench::ud_rpc::UdRpc;
use crate::error::{Error, Result};
use crate::hot::{
    Op, PollTimeout, Postlist, Remote, SendBatch, SendSpec, SlotLayout, UnsignaledCounter,
};
use crate::registry::Registry;
use crate::stats::Counters;
use crate::verbs::{MemoryRegion, QueuePair, WorkCompletion};

pub(super) fn run(kind: Kind, shape: RpcShape<'_>, wa: &WsArgs, reg: &Arc<Registry>) -> Result<()> {
    request_rpc::run_clients(shape, &wa.rpc, |id, t, counters| {
        client(kind, shape, wa, reg, id, t, counters)
    })?;
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
    shape: RpcShape<'_>,
    wa: &WsArgs,
    reg: &Arc<Registry>,
    id: usize,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let a = &wa.rpc;
    let payload = wa.payload(kind);
    let me = format!("client-{id}");
    let ClientLink {
        mut ep,
        master: remote,
        mut rpc,
        workers,
        watch: _workers,
    } = request_rpc::connect_client(shape, a, reg, id, payload)?;
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
    let batch = SendBatch::new(qp, mr, send, Some(Remote::of(&remote.info)))?;
    let mut c = WsClient {
        batch,
        qp,
        mr,
        sig: a.queue.counter(),
        layout: wa.layout(kind),
        slot: vec![0; a.num_workers],
        worker: 0,
        sent: 0,
        id,
        payload,
        check: Checker {
            kind,
            verify: a.common.verify,
            seq: SeqTracker::default(),
            out: Outstanding::new(a.window),
            bad: None,
            body: [0; 64],
        },
    };
    let limit = a.common.op_limit();
    let Some(ops) = request_rpc::run_window(&mut rpc, &mut c, a.window, limit, counters, t, &me)?
    else {
        return publish_done(reg, &me);
    };
    c.sig.drain(c.qp.send_cq(), PollTimeout::default())?;
    if a.common.verify {
        if let Some(bad) = &c.check.bad {
            return Err(Error::Verify(format!("{me}: {bad}")));
        }
        match kind {
            Kind::Sequencer => {
                report_client(reg, &me, id, &c.check.seq, workers.run_id)?;
            }
            Kind::Echo => println!(
                "main: Client {id}: verify ok: {} replies, each carrying an outstanding request's payload back",
                ops + a.window as u64
            ),
        }
    }
    publish_done(reg, &me)
}

/// A client's sending state.
struct WsClient<'a> {
    batch: SendBatch,
    qp: &'a mut QueuePair,
    mr: &'a Arc<MemoryRegion>,
    sig: UnsignaledCounter,
    layout: SlotLayout,
    slot: Vec<usize>,
    worker: usize,
    sent: u64,
    id: usize,
    payload: usize,
    check: Checker,
}

impl WindowClient for WsClient<'_> {
    /// One request to the next worker in turn: its payload into our buffer (the WRITE is
    /// inlined, so the buffer is free again once posted), then the WRITE into that worker's next
    /// slot.
    #[inline]
    fn send(&mut self) -> Result<bool> {
        self.sent += 1;
        let tag = echo_payload::tag(self.id, self.sent);
        // Every word of the request is its tag (echo_payload's layout; payloads are whole words).
        for k in (0..self.payload).step_by(8) {
            self.mr.store_u64(k, tag);
        }
        if self.check.kind == Kind::Echo && self.check.verify {
            self.check.out.add(tag);
        }
        let w = self.worker;
        let s = self.slot[w];
        self.batch
            .retarget(0, Op::Write, self.layout.offset(w, self.id, s) as u64)?;
        self.slot[w] = if s + 1 == self.layout.window {
            0
        } else {
            s + 1
        };
        self.worker = if w + 1 == self.layout.workers {
            0
        } else {
            w + 1
        };
        self.batch
            .post_selective(self.qp, &mut self.sig, PollTimeout::default())?;
        Ok(true)
    }

    #[inline]
    fn take(&mut self, rpc: &UdRpc, wc: &WorkCompletion) -> Result<()> {
        self.check.take(rpc, wc, self.payload);
        Ok(())
    }
}
