//! The clients: WRITE requests (inlined) into the master's region, `window` outstanding, round
//! robin over the workers, and take the replies on a UD QP.

use std::sync::Arc;

use super::{Kind, WsArgs};
use crate::error::{Error, Result};
use crate::framework::echo_payload::{self, Outstanding};
use crate::framework::request_rpc::{connect_client, run_window, RpcShape, WindowClient};
use crate::framework::seq_verify::{report_client, SeqTracker};
use crate::framework::ud_rpc::UdRpc;
use crate::framework::{publish_done, Endpoint, Meter, Plan, Role, ThreadCtx};
use crate::hot::{
    Op, PollTimeout, Postlist, Remote, SendBatch, SendSpec, SlotLayout, UnsignaledCounter,
};
use crate::registry::{Entry, PeerWatch, Registry};
use crate::verbs::WorkCompletion;

/// The client threads of one process.
pub(super) struct Clients<'a> {
    kind: Kind,
    shape: RpcShape<'a>,
    wa: &'a WsArgs,
    reg: Arc<Registry>,
}

impl<'a> Clients<'a> {
    pub(super) fn new(kind: Kind, shape: RpcShape<'a>, wa: &'a WsArgs, reg: Arc<Registry>) -> Self {
        Clients {
            kind,
            shape,
            wa,
            reg,
        }
    }
}

/// A client thread: its reply QP and its sending side.
pub(super) struct Client {
    rpc: UdRpc,
    sender: WsSender,
    /// Worker 0's entry (its run id names the workers' run).
    workers: Entry,
    _watch: PeerWatch,
    /// Replies measured, or None when the last ones did not come after a signal.
    measured: Option<u64>,
}

impl Role for Clients<'_> {
    type Thread = Client;

    fn plan(&self) -> Plan {
        self.shape.client_plan(&self.wa.rpc)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Client> {
        let (kind, wa) = (self.kind, self.wa);
        let a = &wa.rpc;
        let payload = wa.payload(kind);
        let link = connect_client(self.shape, a, &self.reg, ctx, payload)?;
        let mut ep = link.ep;
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
        let batch = SendBatch::new(qp, mr, send, Some(Remote::of(&link.master.info)))?;
        let sender = WsSender {
            ep,
            batch,
            sig: a.queue.counter(),
            timeout: PollTimeout::new(ctx.attention),
            layout: wa.layout(kind),
            slot: vec![0; a.num_workers],
            worker: 0,
            sent: 0,
            id: ctx.global_id,
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
        Ok(Client {
            rpc: link.rpc,
            sender,
            workers: link.workers,
            _watch: link.watch,
            measured: None,
        })
    }

    fn measure(&self, c: &mut Client, m: &mut Meter<'_>) -> Result<()> {
        let a = &self.wa.rpc;
        let me = format!("client-{}", c.sender.id);
        let limit = a.common.op_limit();
        c.measured = run_window(&mut c.rpc, &mut c.sender, a.window, limit, m, &me)?;
        Ok(())
    }

    fn finish(&self, mut c: Client, _: &ThreadCtx<'_>) -> Result<()> {
        let (a, reg) = (&self.wa.rpc, &self.reg);
        let s = &mut c.sender;
        let me = format!("client-{}", s.id);
        let Some(ops) = c.measured else {
            return publish_done(reg, &me);
        };
        s.sig.drain(s.ep.qp().send_cq(), s.timeout)?;
        if a.common.verify {
            if let Some(bad) = &s.check.bad {
                return Err(Error::Verify(format!("{me}: {bad}")));
            }
            match self.kind {
                Kind::Sequencer => {
                    report_client(reg, &me, s.id, &s.check.seq, c.workers.run_id)?;
                }
                Kind::Echo => println!(
                    "main: Client {}: verify ok: {} replies, each carrying an outstanding request's payload back",
                    s.id,
                    ops + a.window as u64
                ),
            }
        }
        publish_done(reg, &me)
    }
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

/// A client's sending side: its QP to the master's region and where its next request goes.
struct WsSender {
    ep: Endpoint,
    batch: SendBatch,
    sig: UnsignaledCounter,
    timeout: PollTimeout,
    layout: SlotLayout,
    slot: Vec<usize>,
    worker: usize,
    sent: u64,
    id: usize,
    payload: usize,
    check: Checker,
}

impl WindowClient for WsSender {
    /// One request to the next worker in turn: its payload into our buffer (the WRITE is
    /// inlined, so the buffer is free again once posted), then the WRITE into that worker's next
    /// slot.
    #[inline]
    fn send(&mut self) -> Result<bool> {
        self.sent += 1;
        let tag = echo_payload::tag(self.id, self.sent);
        let (qp, mr) = self.ep.parts();
        // Every word of the request is its tag (echo_payload's layout; payloads are whole words).
        for k in (0..self.payload).step_by(8) {
            mr.store_u64(k, tag);
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
        self.batch.post_selective(qp, &mut self.sig, self.timeout)?;
        Ok(true)
    }

    #[inline]
    fn take(&mut self, rpc: &UdRpc, wc: &WorkCompletion) -> Result<()> {
        self.check.take(rpc, wc, self.payload);
        Ok(())
    }
}
