//! What the UD request/reply benchmarks (ss-sequencer, ss-echo, and the clients of ws-sequencer
//! and ws-echo) share: UD QPs with a receive ring on QP 0 and a postlist over all of them, and
//! the server's "are my clients done?" check.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::control::Attention;
use crate::error::{Error, Result};
use crate::framework::{QueueArgs, ThreadCtx};
use crate::hot::{PollTimeout, RecvRing, UdPostlist, WaitClock, GRH_BYTES};
use crate::registry::Registry;
use crate::verbs::{
    Access, CompletionQueue, MemoryRegion, Port, QpCaps, QpInfo, QpSpec, QpType, Resources,
    WorkCompletion,
};

/// Receive slots are this far apart (a cache line, as the original).
pub const SLOT_STRIDE: usize = 64;

/// What a [`UdRpc`] is made of.
#[derive(Debug, Clone, Copy)]
pub struct UdRpcSpec {
    /// UD QPs (the original's NUM_UD_QPS for servers; 1 for clients).
    pub qps: usize,
    /// Send queue depth of each QP.
    pub queue_depth: u32,
    /// Receive slots kept posted on QP 0.
    pub recv_slots: usize,
    /// Payload bytes a receive slot takes after the 40-byte GRH.
    pub recv_payload: usize,
    /// Most sends per doorbell.
    pub max_postlist: usize,
    /// Payload bytes a send carries at most (inlined).
    pub send_payload: usize,
    /// Inline limit requested from the QPs.
    pub max_inline: u32,
}

/// UD QPs with a receive ring on QP 0 and one postlist over all of them.
pub struct UdRpc {
    /// The sends: staged, then posted on the next QP in turn.
    pub out: UdPostlist,
    /// Receive slots on QP 0.
    pub ring: RecvRing,
    /// The region the ring receives into.
    pub recv_mr: Arc<MemoryRegion>,
    /// Completions of the ring's receives.
    pub recv_cq: Arc<CompletionQueue>,
    res: Resources,
}

impl UdRpc {
    /// Makes the QPs, regions (placed as `--hugepages`/`--numa-node` say) and ring on `port`
    /// for thread `ctx`, signaling as the queue flags say; nothing is posted yet
    /// ([`Self::fill`]).
    pub fn new(
        ctx: &ThreadCtx<'_>,
        port: &Port,
        spec: UdRpcSpec,
        queue: &QueueArgs,
    ) -> Result<Self> {
        let (place, counter) = (ctx.common.placement(), queue.counter());
        let timeout = PollTimeout::new(ctx.attention);
        let stride = (GRH_BYTES + spec.recv_payload).next_multiple_of(SLOT_STRIDE);
        let res = Resources::new(port)?;
        let recv_cq = res.cq(spec.recv_slots as u32)?;
        let mut qps = Vec::with_capacity(spec.qps);
        for i in 0..spec.qps {
            let send_cq = res.cq(spec.queue_depth)?;
            let caps = QpCaps {
                max_send_wr: spec.queue_depth,
                max_recv_wr: if i == 0 { spec.recv_slots as u32 } else { 1 },
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: spec.max_inline,
            };
            qps.push(res.qp_on(QpSpec::new(QpType::Ud, caps), &send_cq, &recv_cq)?);
        }
        let send_bytes = spec.max_postlist * spec.send_payload.max(8).next_multiple_of(8);
        let send_mr = res.region(send_bytes.max(64), place, Access::LOCAL_WRITE)?;
        let mut out = UdPostlist::new(
            qps,
            &send_mr,
            spec.max_postlist,
            spec.send_payload,
            counter,
            timeout,
        )?;
        let recv_mr = res.region(spec.recv_slots * stride, place, Access::LOCAL_WRITE)?;
        recv_mr.fill(0);
        let ring = RecvRing::new(
            out.qp_mut(0),
            &recv_mr,
            spec.recv_slots,
            stride as u32,
            0,
            stride,
        )?;
        Ok(UdRpc {
            out,
            ring,
            recv_mr,
            recv_cq,
            res,
        })
    }

    /// Posts every receive slot.
    pub fn fill(&mut self) -> Result<()> {
        self.ring.fill(self.out.qp_mut(0))
    }

    /// Hands the slots of the receive completions `done` back (one `ibv_post_recv`).
    #[inline(always)]
    pub fn repost(&mut self, done: &[WorkCompletion]) -> Result<()> {
        self.ring.repost(self.out.qp_mut(0), done)
    }

    /// Offset in [`Self::recv_mr`] of a receive's payload (after the GRH).
    #[inline(always)]
    pub fn payload_offset(&self, wc: &WorkCompletion) -> usize {
        self.ring.slot_offset(wc.wr_id()) + GRH_BYTES
    }

    /// What a peer needs to send to QP 0.
    pub fn info(&self) -> QpInfo {
        self.out.qp(0).info(None)
    }

    /// An AH to the UD peer `remote`, registered as a destination of [`Self::out`].
    pub fn dest_to(&mut self, remote: &QpInfo) -> Result<crate::hot::DestId> {
        let ah = crate::verbs::AddressHandle::new(self.res.pd(), self.res.port(), remote)?;
        self.out.add_dest(&ah)
    }

    /// Polls receive completions until `outstanding` more arrived or `timeout` passed (a
    /// client's end: the replies to its last requests); calls `each` on every completion.
    pub fn drain_replies(
        &mut self,
        mut outstanding: usize,
        timeout: PollTimeout,
        mut each: impl FnMut(&Self, &WorkCompletion) -> Result<()>,
    ) -> Result<()> {
        let mut wcs = [WorkCompletion::default(); 16];
        let mut clock = WaitClock::default();
        while outstanding > 0 {
            let n = self.recv_cq.poll(&mut wcs[..outstanding.min(16)])?;
            if n == 0 {
                if clock.look(timeout.limit) >= timeout.limit {
                    return Err(Error::Verify(format!(
                        "{outstanding} replies to this client's last requests never arrived \
                         (within {})",
                        crate::error::fmt_secs(timeout.limit)
                    )));
                }
                std::thread::yield_now();
                continue;
            }
            for wc in &wcs[..n] {
                wc.result()?;
                each(self, wc)?;
            }
            outstanding -= n;
        }
        Ok(())
    }
}

/// The clients a server thread answers (by registry name), and whether they have all left.
pub struct ClientSet {
    names: Vec<String>,
    /// The run of each client, when the server met them all at setup.
    runs: Option<Vec<u64>>,
    next_look: Instant,
}

impl ClientSet {
    /// Clients named `names`.
    pub fn new(names: Vec<String>) -> Self {
        ClientSet {
            names,
            runs: None,
            next_look: Instant::now(),
        }
    }

    /// Clients named `names` that the server met at setup, as runs `runs`: all of them must
    /// mark themselves done.
    pub fn known(names: Vec<String>, runs: Vec<u64>) -> Self {
        ClientSet {
            names,
            runs: Some(runs),
            next_look: Instant::now(),
        }
    }

    /// The names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// True when at least one client marked itself done and every client that is still in the
    /// registry did too (looks at most every 500 ms; a server calls this in lulls only).
    pub fn all_done(&mut self, reg: &Registry) -> Result<bool> {
        let now = Instant::now();
        if now < self.next_look {
            return Ok(false);
        }
        self.next_look = now + Duration::from_millis(500);
        if let Some(runs) = &self.runs {
            for (n, run) in self.names.iter().zip(runs) {
                if !reg.is_ready(&format!("{n}-done"), Some(*run))? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        let mut any = false;
        for n in &self.names {
            let entry = reg.lookup_now(n)?;
            let done = reg.is_ready(&format!("{n}-done"), entry.as_ref().map(|e| e.run_id))?;
            if entry.is_some() && !done {
                return Ok(false);
            }
            any |= done;
        }
        Ok(any)
    }

    /// The clients that took part: an entry or a done marker is in the registry.
    pub fn present(&self, reg: &Registry) -> Result<Vec<String>> {
        let mut v = Vec::new();
        for n in &self.names {
            if reg.lookup_now(n)?.is_some() || reg.is_ready(&format!("{n}-done"), None)? {
                v.push(n.clone());
            }
        }
        Ok(v)
    }
}

/// How long a client waits for the replies to its last requests: a server that was stopped by
/// the same Ctrl-C will not answer, so a signalled client waits only briefly.
pub(crate) fn drain_timeout(attention: Attention) -> PollTimeout {
    let secs = if attention.stopped_by_signal() { 1 } else { 5 };
    PollTimeout::new(attention).with_limit(Duration::from_secs(secs))
}

/// A client's drain result: replies missing after a signal are a note, not a failure (its
/// servers were most likely stopped too), and nothing is verified. Returns whether every reply
/// came back.
pub(crate) fn settle(drained: Result<()>, me: &str, attention: Attention) -> Result<bool> {
    match drained {
        Ok(()) => Ok(true),
        Err(e) if attention.stopped_by_signal() => {
            eprintln!("{me}: stopped by a signal with replies outstanding ({e}); not verified");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
