//! The workers: poll their slots of the request region for every client in turn, collect up to
//! `postlist` requests, and answer them with one doorbell per server port.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Kind, WsArgs};
use crate::error::Result;
use crate::framework::echo_payload;
use crate::framework::request_rpc::{connect_worker, RpcShape, WorkerLink};
use crate::framework::seq_verify::check_totals;
use crate::framework::{publish_done, Lull, Meter, Plan, Role, ThreadCtx};
use crate::hot::Payload;
use crate::registry::Registry;

/// The worker threads of one process.
pub(super) struct Workers<'a> {
    kind: Kind,
    shape: RpcShape<'a>,
    wa: &'a WsArgs,
    reg: Arc<Registry>,
    /// ws-sequencer's counter, shared by the workers.
    seq: AtomicU64,
}

impl<'a> Workers<'a> {
    pub(super) fn new(kind: Kind, shape: RpcShape<'a>, wa: &'a WsArgs, reg: Arc<Registry>) -> Self {
        Workers {
            kind,
            shape,
            wa,
            reg,
            seq: AtomicU64::new(0),
        }
    }

    /// `--verify 1` on ws-sequencer's workers, once every one is done: the values handed out
    /// against what the clients received.
    pub(super) fn verify_totals(&self) -> Result<()> {
        let (a, reg) = (&self.wa.rpc, &self.reg);
        if self.kind != Kind::Sequencer || !a.common.verify {
            return Ok(());
        }
        if crate::control::install_stop_signals()?.stopped_by_signal() {
            println!("main: verify skipped: stopped by a signal before every client could report");
            return Ok(());
        }
        let names: Vec<String> = (0..a.num_clients).map(|c| format!("client-{c}")).collect();
        let line = check_totals(
            reg,
            &names,
            &[reg.run_id()],
            self.seq.load(Ordering::Acquire),
            std::time::Duration::from_secs(10),
        )?;
        println!("{line}");
        Ok(())
    }
}

impl Role for Workers<'_> {
    type Thread = WorkerLink;

    fn plan(&self) -> Plan {
        self.shape
            .worker_plan(&self.wa.rpc, self.wa.payload(self.kind) as u64)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<WorkerLink> {
        let payload = self.wa.payload(self.kind);
        connect_worker(self.shape, &self.wa.rpc, &self.reg, ctx, payload)
    }

    fn measure(&self, link: &mut WorkerLink, m: &mut Meter<'_>) -> Result<()> {
        let (kind, wa, reg, seq) = (self.kind, self.wa, &self.reg, &self.seq);
        let a = &wa.rpc;
        let w = m.thread();
        let payload = wa.payload(kind);
        let WorkerLink {
            region,
            rpcs,
            dests,
            clients,
            ..
        } = link;
        let layout = wa.layout(kind);
        let mut slot = vec![0usize; a.num_clients];
        // Requests served per client: the client numbers its requests k = 1, 2, … and sends request
        // k to worker (k − 1) mod num-workers, so the next one we expect is known exactly.
        let mut served = vec![0u64; a.num_clients];
        let mut picked: Vec<usize> = Vec::with_capacity(a.postlist as usize);
        let mut bodies = vec![[0u8; 64]; a.postlist as usize];
        let tag_at = payload - 8;
        let (mut next, mut ops) = (0usize, 0u64);
        let mut lull = Lull::new();
        while m.checkpoint() && ops < a.common.op_limit() {
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
                if lull.empty(m) && lull.started() && clients.all_done(reg)? {
                    break;
                }
                continue;
            }
            lull.busy(m);
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
                    Kind::Echo => {
                        out.push(dest, qpn, None, Payload::Bytes(&bodies[k][..payload]))?
                    }
                }
            }
            for rpc in rpcs.iter_mut() {
                rpc.out.flush()?;
            }
            ops += n as u64;
            m.count(ops);
        }
        m.stop();
        for rpc in rpcs.iter_mut() {
            rpc.out.drain()?;
        }
        Ok(())
    }

    fn finish(&self, link: WorkerLink, ctx: &ThreadCtx<'_>) -> Result<()> {
        println!(
            "main: Worker {}: average postlist = {:.2}",
            ctx.t,
            link.rpcs[0].out.average_postlist()
        );
        publish_done(&self.reg, &format!("worker-{}", ctx.t))
    }
}
