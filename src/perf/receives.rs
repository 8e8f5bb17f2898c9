//! The RECV half of send-bw: every QP's RECVs posted up front, reposted as SENDs arrive, and
//! perftest's `run_iter_bw_server` (the side that only receives). `-b` drives the same RECVs
//! from the posting loop ([`super::bw::post_side`]).

use std::sync::Arc;
use std::time::Duration;

use super::bw::{stall, POLL_BATCH, STALL};
use super::clock::{self, SampledWindow};
use super::session::Session;
use super::stats::BwRow;
use crate::error::Result;
use crate::hot::{PollTimeout, RecvBatch, Stall};
use crate::verbs::{CompletionQueue, QpType, WorkCompletion};

/// Over UC and UD a receiver that has heard nothing for this long once SENDs flowed takes the
/// rest as lost (a SEND that finds no RECV is dropped): it reports what arrived.
const LOSS_QUIET: Duration = Duration::from_secs(5);

/// Each QP's RECVs, and how many SENDs of the current size arrived. A RECV's `wr_id` is the
/// index of the QP whose buffer it fills: with `--use-srq` any QP may consume it.
pub struct Receives {
    batches: Vec<RecvBatch>,
    /// RECVs each batch keeps posted: `rx_depth`, or its share of the SRQ's.
    depth: u64,
    /// Per QP, RECVs posted for the current size (one a lost SEND left posted counts).
    posted: Vec<u64>,
    /// Per QP, RECVs on the queue now.
    queued: Vec<u64>,
    /// Per QP, RECVs consumed and not yet reposted (they go back `chain` at a time).
    due: Vec<u64>,
    /// RECVs per ibv_post_recv (`--recv_post_list`).
    chain: u64,
    cq: Arc<CompletionQueue>,
    wcs: [WorkCompletion; POLL_BATCH],
    /// Per QP, RECVs are reposted until this many were posted (every time in a timed run).
    iters: Option<u64>,
    rx_depth: u64,
    /// SENDs of the current size received, all QPs.
    pub rcnt: u64,
    lossy: bool,
    quiet: Stall,
}

impl Receives {
    /// Each QP's RECVs for the whole run, nothing posted yet. They take the run's largest
    /// size, so that a RECV a lost SEND (UC, UD) left posted fits any later size of a sweep.
    pub fn new(s: &mut Session) -> Result<Receives> {
        let nq = s.qps.len();
        let chain = s.settings.recv_post_list;
        let mut batches = Vec::with_capacity(nq);
        for q in 0..nq {
            let mut b = s.recv_chain(q, s.settings.alloc_size, chain as usize)?;
            b.set_wr_id(q as u64);
            batches.push(b);
        }
        let rx_depth = u64::from(s.settings.rx_depth);
        Ok(Receives {
            batches,
            // perftest's size_per_qp: the SRQ's entries shared out evenly.
            depth: if s.srq.is_some() {
                rx_depth / nq as u64
            } else {
                rx_depth
            },
            posted: vec![0; nq],
            queued: vec![0; nq],
            due: vec![0; nq],
            chain: u64::from(chain),
            cq: Arc::clone(s.qps[0].recv_cq()),
            wcs: [WorkCompletion::default(); POLL_BATCH],
            iters: (s.settings.window().is_none()).then(|| s.settings.iters()),
            rx_depth,
            rcnt: 0,
            lossy: s.settings.qp_type != QpType::Rc,
            quiet: stall(s.attention, LOSS_QUIET, s.settings.events.is_some()),
        })
    }

    /// Before a size's handshake (perftest's ctx_set_recv_wqes): fills every QP's receive
    /// queue (or its share of the SRQ) with chains of RECVs, counting any a lost SEND left
    /// there, and restarts the counts.
    pub fn begin_size(&mut self, s: &mut Session) -> Result<()> {
        let chain = self.chain as usize;
        for q in 0..self.batches.len() {
            while self.queued[q] + self.chain <= self.depth {
                self.batches[q].post(&mut s.qps[q], chain)?;
                self.queued[q] += self.chain;
            }
            self.posted[q] = self.queued[q];
            self.due[q] = 0;
        }
        self.rcnt = 0;
        self.quiet.progress();
        if let Some(c) = s.credits.as_mut() {
            c.begin_size();
        }
        Ok(())
    }

    /// Reaps what arrived and reposts those RECVs; returns how many arrived. It drains the CQ,
    /// up to `rx_depth` completions (as perftest's run_iter_bi polls): a sender that also posts
    /// (`-b`) reaps in bursts, and RECVs reposted 16 at a time would fall behind and run the
    /// queue dry (RNR waits on RC, drops on UC/UD).
    #[inline]
    pub fn poll(&mut self, s: &mut Session) -> Result<u64> {
        let mut total = 0;
        loop {
            let n = self.cq.poll(&mut self.wcs)?;
            for wc in &self.wcs[..n] {
                wc.result()?;
                let q = wc.wr_id() as usize;
                self.queued[q] -= 1;
                if self.iters.is_none_or(|i| self.posted[q] < i) {
                    self.due[q] += 1;
                    if self.due[q] == self.chain {
                        self.batches[q].post(&mut s.qps[q], self.chain as usize)?;
                        self.posted[q] += self.chain;
                        self.queued[q] += self.chain;
                        self.due[q] = 0;
                    }
                }
                if let Some(c) = s.credits.as_mut() {
                    c.taken(q, &mut s.qps[q], PollTimeout::new(s.attention))?;
                }
            }
            total += n as u64;
            if n < POLL_BATCH || total >= self.rx_depth {
                break;
            }
        }
        self.rcnt += total;
        if total > 0 {
            self.quiet.progress();
        }
        Ok(total)
    }

    /// Over UC or UD, once SENDs flowed: true when nothing came for a while, the rest being
    /// lost; says so on stderr. Call after an empty poll.
    pub fn gave_up(&mut self, total: u64, s: &Session) -> bool {
        if !self.lossy || self.rcnt == 0 || self.quiet.idle(String::new).is_ok() {
            return false;
        }
        eprintln!(
            " Received {} of {total} messages: {} were lost (over {} a SEND that finds no RECV \
             is dropped)",
            self.rcnt,
            total.saturating_sub(self.rcnt),
            s.settings.qp_type.name()
        );
        true
    }
}

/// Runs one size on the receiving side of send-bw (perftest's run_iter_bw_server): counts
/// RECVs up to the last. Peak is never computed. Polling, the span starts before the last poll
/// that found nothing: every RECV arrived after it. (perftest starts at the poll that finds the
/// first RECVs, which leaves them out of the span: near infinity for a run whose RECVs all
/// come in one poll.) With `-e` it starts at that poll, as perftest's: a clock read before
/// the wait for an event would count the sender's setup. With `--run_infinitely` a row goes
/// to `interval` every window until a stop request, or until the client has been quiet for
/// a while (it was stopped); the row returned is then the last full window's.
pub fn receive_side(
    s: &mut Session,
    size: u64,
    rx: &mut Receives,
    mut interval: impl FnMut(&BwRow),
) -> Result<BwRow> {
    let st = s.settings.clone();
    let total = st.iters() * s.qps.len() as u64;
    let events = st.events.is_some();
    let attention = s.attention;
    let mut guard = stall(attention, STALL, events);
    let mut ended = stall(attention, LOSS_QUIET, events);
    let cq = Arc::clone(&rx.cq);
    let (mut first, mut last) = (clock::now(), 0u64);
    let timed = st.window();
    let ticks_per_s = clock::ticks_per_us() * 1e6;
    // Started at the first RECV, as perftest's receiver starts its clock.
    let mut window = SampledWindow::default();
    let mut last_window = None;
    loop {
        if let Some((secs, margin)) = timed {
            if rx.rcnt > 0 && !window.running() {
                // An empty window once SENDs flowed: the client was stopped.
                if !st.infinite || window.sampled() == 0 {
                    break;
                }
                let row = BwRow::of_window(size, &window, st.gbits);
                interval(&row);
                last_window = Some(row);
                window = SampledWindow::default();
                window.start(secs, margin);
            }
        } else if rx.rcnt >= total {
            break;
        }
        if attention.stop_requested() {
            break;
        }
        let before = rx.rcnt;
        let polled_at = if before == 0 && !events {
            clock::now()
        } else {
            0
        };
        let n = rx.poll(s)?;
        if n == 0 {
            if before == 0 && !events {
                first = polled_at;
            }
            if st.infinite && rx.rcnt > 0 {
                // The client stops by Ctrl-C; it then waits for us at the closing handshake.
                if ended.idle(String::new).is_err() {
                    break;
                }
            } else if timed.is_none() && rx.gave_up(total, s) {
                break;
            } else {
                guard.idle_on(&[&cq], || "SEND from the peer".into())?;
            }
            continue;
        }
        guard.progress();
        ended.progress();
        let t = clock::now();
        if before == 0 {
            if events {
                first = t;
            }
            if let Some((secs, margin)) = timed {
                window.start(secs, margin);
            }
        }
        window.count(n);
        last = t;
    }
    if let Some(c) = s.credits.as_mut() {
        c.drain(&s.qps, PollTimeout::new(attention))?;
    }
    Ok(match timed {
        Some(_) if st.infinite => last_window.unwrap_or_default(),
        Some(_) => BwRow::of_window(size, &window, st.gbits),
        None => BwRow::average(
            size,
            rx.rcnt,
            last.saturating_sub(first),
            ticks_per_s,
            st.gbits,
        ),
    })
}
