//! The BW loops: perftest's `run_iter_bw` (the side that posts WRITEs, READs, atomics or SENDs)
//! and `run_iter_bw_server` (the side that receives SENDs), on prebuilt batches.
//!
//! As perftest: each QP keeps at most `tx_depth` WRs in flight; a WR is signaled every `cq_mod`
//! posts (and the last one of an iteration run), and each completion retires `cq_mod` WRs; with
//! `-l` a chain of `post_list` WRs goes out per doorbell; a message small enough to fit twice in
//! the cycle buffer steps its local and remote addresses by INC per post, wrapping in the cycle
//! buffer. Posts and completions are stamped for the peak unless `-N` (or `-D`).

use std::time::Duration;

use super::clock::{self, SampledWindow};
use super::rate::{Bursts, Pace, Unpaced};
use super::receives::Receives;
use super::session::Session;
use super::settings::AtomicType;
use super::stats::{peak_ticks_per_msg, BwRow};
use super::Verb;
use crate::control::Attention;
use crate::error::Result;
use crate::hot::{poll_exact, Moderation, PollTimeout, Remote, SendBatch, SendSpec, Stall};
use crate::verbs::{Op, WorkCompletion};

/// perftest polls up to this many completions at once (CTX_POLL_BATCH).
pub(super) const POLL_BATCH: usize = 16;
/// Without any completion for this long, the run has failed.
pub(crate) const STALL: Duration = PollTimeout::DEFAULT;

/// The operation of a test's WRs.
pub fn op_of(verb: Verb, atomic: AtomicType) -> Op {
    match verb {
        Verb::Write => Op::Write,
        Verb::Read => Op::Read,
        Verb::Send => Op::Send,
        Verb::Atomic => match atomic {
            AtomicType::FetchAndAdd => Op::FetchAdd(1),
            AtomicType::CmpAndSwap => Op::CmpSwap(0, 0),
        },
    }
}

/// perftest's bound on a wait for completions ([`Stall`]): `limit` of nothing (10 s unless said)
/// fails the run; with `-e` (`events`) an empty poll sleeps on the CQs' completion events.
pub(crate) fn stall(attention: Attention, limit: Duration, events: bool) -> Stall {
    Stall::new(PollTimeout::new(attention).with_limit(limit))
        .sleeping(events)
        .hint("the peer is gone, or runs another test or size")
}

/// Builds QP `q`'s batch for `size`-byte messages.
fn batch_for(s: &mut Session, q: usize, size: u64) -> Result<(SendBatch, u64)> {
    let st = &s.settings;
    let op = op_of(st.tool.verb, st.atomic);
    let geo = s.geo;
    let slots = geo.slots(size);
    let inc = geo.inc(size);
    let pl = st.post_list as usize;
    let chains = Moderation::new(st.cq_mod, st.tx_depth, None);
    let spec = SendSpec {
        op,
        postlist: pl,
        size: size as u32,
        // move_to places every slot below, wrapping a chain longer than the cycle buffer in it
        // as perftest's does; a linear stride could run past the MR first.
        stride: 0,
        local_offset: geo.local(q as u64) as usize,
        remote_offset: 0,
        inline: size <= u64::from(s.inline) && matches!(st.tool.verb, Verb::Write | Verb::Send),
    };
    let remote = (st.tool.verb != Verb::Send).then(|| Remote {
        addr: s.rem[q].vaddr,
        rkey: s.rem[q].rkey,
        len: 0,
    });
    let mut b = s.send_batch(q, spec, remote)?;
    for j in 0..pl {
        b.set_wr_id(j, q as u64);
        // A chain longer than the cycle buffer wraps in it, as perftest's does.
        let k = (j as u64 % slots) * if slots > 1 { inc } else { 0 };
        b.move_to(j, geo.local(q as u64) + k, k)?;
        if pl > 1 {
            b.set_signaled(j, chains.chain_signaled(j as u64));
        }
    }
    Ok((b, slots))
}

/// `--perform_warm_up`: per QP, one send queue of single WRs (one chain with `-l`) to the
/// addresses the run will use, every signaled completion reaped, so that the measured run starts
/// with warm caches and an empty CQ. (perftest's own waits for one completion per post, which
/// never come when its CQ moderation is above 1.)
pub fn warm_up(s: &mut Session, size: u64) -> Result<()> {
    let (pl, cq_mod, tx_depth) = (s.settings.post_list, s.settings.cq_mod, s.settings.tx_depth);
    for q in 0..s.qps.len() {
        let (mut batch, _) = batch_for(s, q, size)?;
        let qp = &mut s.qps[q];
        let signaled = if pl == 1 {
            batch.set_signaled(0, true);
            for _ in 0..tx_depth {
                batch.post(qp)?;
            }
            tx_depth
        } else {
            batch.post(qp)?;
            pl / cq_mod
        };
        let mut wcs = vec![WorkCompletion::default(); signaled as usize];
        poll_exact(qp.send_cq(), &mut wcs, PollTimeout::new(s.attention))?;
    }
    Ok(())
}

/// Runs one size on the posting side; returns its row (MB/s or Gb/s as set). With
/// `--run_infinitely` the `-D` window repeats until a stop request, each one's row handed to
/// `interval` as it closes (WRs in flight carry over from one window to the next); the row
/// returned is the last full window's.
///
/// With `rx` (send-bw `-b`, perftest's run_iter_bi) the loop also reaps and reposts the peer's
/// SENDs, and runs until both directions are done; the server starts posting at its first
/// RECV, so that the client's RECVs are surely up. The row is this side's SENDs.
// Never inlined: the CI instruction gate counts this function's inclusive cost, by name, as
// write-bw's loop (bench_scripts/compare-perftest.sh).
#[inline(never)]
pub fn post_side(
    s: &mut Session,
    size: u64,
    rx: Option<&mut Receives>,
    interval: impl FnMut(&BwRow),
) -> Result<BwRow> {
    // The limiter's loop is a copy of its own: a run without one pays nothing for it.
    match s.settings.rate {
        Some(limit) if !limit.hw => {
            post_paced(s, size, rx, &mut Bursts::new(&limit, size), interval)
        }
        _ => post_paced(s, size, rx, &mut Unpaced, interval),
    }
}

/// [`post_side`] with its posts paced by `pace`.
#[inline(always)]
fn post_paced<P: Pace>(
    s: &mut Session,
    size: u64,
    mut rx: Option<&mut Receives>,
    pace: &mut P,
    mut interval: impl FnMut(&BwRow),
) -> Result<BwRow> {
    let nq = s.qps.len();
    let mut batches = Vec::with_capacity(nq);
    for q in 0..nq {
        batches.push(batch_for(s, q, size)?);
    }
    if let Some(c) = s.credits.as_mut() {
        c.begin_size();
    }
    let st = s.settings.clone();
    let (pl, cq_mod) = (u64::from(st.post_list), u64::from(st.cq_mod));
    let inc = s.geo.inc(size);
    let timed = st.window();
    let mut window = SampledWindow::new(timed);
    let iters = st.iters();
    let total = iters * nq as u64;
    let stamps = !st.no_peak;
    let mut posted = vec![0u64; if stamps { total as usize } else { 0 }];
    let mut completed = vec![0u64; if stamps { total as usize } else { 0 }];
    let counted = timed.is_none().then_some(iters);
    let mut qmod = vec![Moderation::new(st.cq_mod, st.tx_depth, counted); nq];
    let (mut totscnt, mut totccnt) = (0u64, 0u64);
    let mut wcs = [WorkCompletion::default(); POLL_BATCH];
    let attention = s.attention;
    let mut guard = stall(attention, STALL, st.events.is_some());
    let send_cq = std::sync::Arc::clone(s.qps[0].send_cq());
    let recv_cq = std::sync::Arc::clone(s.qps[0].recv_cq());
    let both = [&*send_cq, &*recv_cq];
    // What an empty loop waits on: -b's RECVs too.
    let waits = if rx.is_some() { &both[..] } else { &both[..1] };
    // Read once: the post calls are opaque to the compiler, which would reload the Option
    // before every post.
    let paced_by_credits = s.credits.is_some();
    let start = clock::now();
    let ticks_per_s = clock::ticks_per_us() * 1e6;
    let mut last_window = None;
    loop {
        if timed.is_some() {
            if !window.running() {
                if !st.infinite || attention.stop_requested() {
                    break;
                }
                let row = BwRow::of_window(size, &window, st.gbits);
                interval(&row);
                last_window = Some(row);
                window = SampledWindow::new(timed);
            }
        } else if qmod.iter().all(|m| m.completed() >= iters)
            && rx.as_ref().is_none_or(|r| r.rcnt >= total)
        {
            // Every QP's last (short) batch has completed: with several QPs the total alone
            // could be reached with one QP's completion still in the CQ, to be miscounted by
            // the next size.
            break;
        }
        if attention.stop_requested() {
            break;
        }
        let mut arrived = 0;
        if let Some(r) = rx.as_deref_mut() {
            arrived = r.poll(s)?;
            // A -D row counts both directions, as perftest's (it prints no sum then).
            window.count(arrived);
            if r.rcnt == 0 && !st.is_client {
                if arrived == 0 {
                    guard.idle_on(&both[1..], || "SEND from the peer".into())?;
                }
                continue;
            }
        }
        for (q, (batch, slots)) in batches.iter_mut().enumerate() {
            let (qp, qm) = (&mut s.qps[q], &mut qmod[q]);
            while (timed.is_some() || qm.posted() < iters)
                && qm.has_room(pl)
                && (!paced_by_credits
                    || s.credits
                        .as_ref()
                        .is_none_or(|c| c.window_open(q, qm.posted(), pl)))
                && pace.may_post()
            {
                if pl == 1 {
                    let m = qm.posted();
                    if *slots > 1 {
                        let k = (m % *slots) * inc;
                        batch.move_to(0, s.geo.local(q as u64) + k, k)?;
                    }
                    batch.set_signaled(0, qm.next_signaled());
                }
                if stamps {
                    posted[totscnt as usize] = clock::now();
                }
                batch.post(qp)?;
                qm.count_posted(pl);
                pace.posted(pl);
                totscnt += pl;
            }
        }
        let n = send_cq.poll(&mut wcs)?;
        if n == 0 && arrived == 0 {
            // Between two bursts of the limiter: an empty poll is the pace, not the peer.
            if pace.holding() {
                continue;
            }
            if let Some(r) = rx.as_deref_mut() {
                let sent = qmod.iter().all(|m| m.completed() >= iters);
                if timed.is_none() && sent && r.gave_up(total, s) {
                    break;
                }
            }
            guard.idle_on(waits, || "completion".into())?;
            continue;
        }
        guard.progress();
        let t = if stamps { clock::now() } else { 0 };
        for wc in &wcs[..n] {
            wc.result()?;
            let done = qmod[wc.wr_id() as usize].retire();
            totccnt += done;
            if stamps {
                completed[(totccnt.min(total) - 1) as usize] = t;
            }
            window.count(done);
        }
    }
    let end = clock::now();
    let row = match timed {
        Some(_) if st.infinite => last_window.unwrap_or_default(),
        Some(_) => BwRow::of_window(size, &window, st.gbits),
        None => {
            let done = totccnt.min(total);
            let ticks = if stamps && done > 0 {
                completed[(done - 1) as usize].saturating_sub(posted[0])
            } else {
                end.saturating_sub(start)
            };
            let mut row = BwRow::average(size, done, ticks, ticks_per_s, st.gbits);
            if stamps && done == total {
                if let Some(best) =
                    peak_ticks_per_msg(&posted, &completed, pl as usize, cq_mod as usize)
                {
                    row.peak =
                        size as f64 * ticks_per_s / best / super::stats::format_factor(st.gbits);
                }
            }
            row
        }
    };
    Ok(row)
}
