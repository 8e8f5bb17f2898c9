//! The latency loops: perftest's `run_iter_lat_write` (a WRITE ping-pong on the last byte of
//! each side's buffer, the server first), `run_iter_lat_send` (a SEND ping-pong, the client
//! first) and `run_iter_lat` (READs or atomics, one at a time, the client only). Each post is
//! stamped; a sample is the gap between two consecutive posts.

use super::bw::{op_of, stall, STALL};
use super::clock::{self, SampledWindow};
use super::session::Session;
use super::Verb;
use crate::error::Result;
use crate::hot::Stall;
use crate::hot::{poll_one, PollTimeout, RecvBatch, Remote, SendBatch, SendSpec};
use crate::stats::Stamp;
use crate::verbs::{CompletionQueue, WorkCompletion};

/// What a latency run measured.
#[derive(Debug, Clone, Default)]
pub struct LatRun {
    /// The stamp of every post (iteration runs).
    pub posts: Vec<Stamp>,
    /// Operations counted in the sampled window (`-D` runs).
    pub sampled: u64,
    /// The window's length in ticks (`-D` runs).
    pub window_ticks: u64,
    /// `--cpu_util`: the host's CPU busy over the window.
    pub cpu: Option<f64>,
}

/// The side's one batch of one WR, signaled.
fn single(s: &mut Session, size: u64) -> Result<SendBatch> {
    let verb = s.settings.tool.verb;
    let spec = SendSpec {
        op: op_of(verb, s.settings.atomic),
        postlist: 1,
        size: size as u32,
        stride: 0,
        local_offset: s.geo.local(0) as usize,
        remote_offset: 0,
        inline: size <= u64::from(s.inline) && matches!(verb, Verb::Write | Verb::Send),
    };
    let remote = (verb != Verb::Send).then(|| Remote {
        addr: s.rem[0].vaddr,
        rkey: s.rem[0].rkey,
        len: 0,
    });
    let mut b = s.send_batch(0, spec, remote)?;
    b.set_signaled(0, true);
    Ok(b)
}

fn finish(w: SampledWindow, posts: Vec<Stamp>) -> LatRun {
    LatRun {
        posts,
        sampled: w.sampled(),
        window_ticks: w.ticks(),
        cpu: w.cpu_util(),
    }
}

/// perftest's run_iter_lat_write for one size.
pub fn write_ping_pong(s: &mut Session, size: u64) -> Result<LatRun> {
    let iters = s.settings.iters();
    let server = !s.settings.is_client;
    let mut batch = single(s, size)?;
    let post_byte = (s.geo.local(0) + size - 1) as usize;
    let poll_byte = (s.geo.exposed(0) + size - 1) as usize;
    let mr = std::sync::Arc::clone(&s.mrs[0]);
    let dur = s.settings.window().is_some();
    let mut clk = SampledWindow::new(s.settings.window());
    let mut posts = Vec::with_capacity(iters as usize);
    let (mut scnt, mut rcnt, mut ccnt) = (0u64, 0u64, 0u64);
    let qp = &mut s.qps[0];
    let cq = std::sync::Arc::clone(qp.send_cq());
    let attention = s.attention;
    let gap = clock::ticks_of_us(s.settings.latency_gap_us);
    let mut guard = stall(attention, STALL, false);
    while scnt < iters || ccnt < iters || rcnt < iters || dur {
        if !clk.running() || attention.stop_requested() {
            break;
        }
        if (rcnt < iters || dur) && !(scnt < 1 && server) {
            rcnt += 1;
            let want = rcnt as u8;
            // Only the peer's WRITEs store there; a one-byte atomic load cannot tear.
            while mr.load_u8(poll_byte) != want {
                if !clk.running() || attention.stop_requested() {
                    return Ok(finish(clk, posts));
                }
                guard.idle(|| "WRITE from the peer".into())?;
            }
            guard.progress();
        }
        if scnt < iters || dur {
            // --latency_gap: before the stamp, so the gap is in the sample, as perftest's.
            if gap != 0 {
                clock::spin(gap);
            }
            if !dur {
                posts.push(clock::now());
            }
            scnt += 1;
            // The previous WRITE from this byte has completed (its CQE was reaped below).
            mr.store_u8(post_byte, scnt as u8);
            batch.post(qp)?;
        }
        if ccnt < iters || dur {
            poll_one(&cq, PollTimeout::new(attention))?;
            ccnt += 1;
            clk.count(1);
        }
    }
    Ok(finish(clk, posts))
}

/// Waits for one completion on `cq` (sleeping on its events with `-e`).
fn reap_one(cq: &CompletionQueue, guard: &mut Stall, what: &str) -> Result<()> {
    let mut wc = [WorkCompletion::default()];
    loop {
        if cq.poll(&mut wc)? == 1 {
            wc[0].result()?;
            guard.progress();
            return Ok(());
        }
        guard.idle_on(&[cq], || what.into())?;
    }
}

/// perftest's run_iter_lat (READ or atomic), client side, for one size.
pub fn read_round_trips(s: &mut Session, size: u64) -> Result<LatRun> {
    let iters = s.settings.iters();
    let mut batch = single(s, size)?;
    let dur = s.settings.window().is_some();
    let mut clk = SampledWindow::new(s.settings.window());
    let mut posts = Vec::with_capacity(iters as usize);
    let qp = &mut s.qps[0];
    let cq = std::sync::Arc::clone(qp.send_cq());
    let attention = s.attention;
    let mut guard = stall(attention, STALL, s.settings.events.is_some());
    let gap = clock::ticks_of_us(s.settings.latency_gap_us);
    let mut scnt = 0u64;
    while (scnt < iters || dur) && clk.running() && !attention.stop_requested() {
        if gap != 0 {
            clock::spin(gap);
        }
        if !dur {
            posts.push(clock::now());
        }
        scnt += 1;
        batch.post(qp)?;
        reap_one(&cq, &mut guard, "completion")?;
        clk.count(1);
    }
    Ok(finish(clk, posts))
}

/// Posts the `rx_depth` RECVs of a send-lat size (before the size's handshake, as perftest).
pub fn send_receives(s: &mut Session, size: u64) -> Result<RecvBatch> {
    let mut r = s.recv_batch(0, size)?;
    for _ in 0..s.settings.rx_depth {
        r.post(&mut s.qps[0], 1)?;
    }
    Ok(r)
}

/// perftest's run_iter_lat_send for one size; `recv` holds the RECVs already posted.
pub fn send_ping_pong(s: &mut Session, size: u64, recv: &mut RecvBatch) -> Result<LatRun> {
    let iters = s.settings.iters();
    let client = s.settings.is_client;
    let (cq_mod, rx_depth) = (u64::from(s.settings.cq_mod), u64::from(s.settings.rx_depth));
    let mut batch = single(s, size)?;
    let dur = s.settings.window().is_some();
    let mut clk = SampledWindow::new(s.settings.window());
    let mut posts = Vec::with_capacity(iters as usize);
    let qp = &mut s.qps[0];
    let send_cq = std::sync::Arc::clone(qp.send_cq());
    let recv_cq = std::sync::Arc::clone(qp.recv_cq());
    let mut wc = [WorkCompletion::default()];
    let attention = s.attention;
    let mut guard = stall(attention, STALL, s.settings.events.is_some());
    let gap = clock::ticks_of_us(s.settings.latency_gap_us);
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    while scnt < iters || rcnt < iters || dur {
        if !clk.running() || attention.stop_requested() {
            break;
        }
        if (rcnt < iters || dur) && !(scnt < 1 && client) {
            loop {
                if recv_cq.poll(&mut wc)? == 1 {
                    wc[0].result()?;
                    break;
                }
                if !clk.running() || attention.stop_requested() {
                    return Ok(finish(clk, posts));
                }
                guard.idle_on(&[&recv_cq], || "SEND from the peer".into())?;
            }
            guard.progress();
            rcnt += 1;
            clk.count(1);
            if dur || rcnt + rx_depth <= iters {
                recv.post(qp, 1)?;
            }
        }
        if scnt < iters || dur {
            if gap != 0 {
                clock::spin(gap);
            }
            if !dur {
                posts.push(clock::now());
            }
            scnt += 1;
            let signaled = scnt % cq_mod == 0 || scnt == iters;
            batch.set_signaled(0, signaled);
            batch.post(qp)?;
            if signaled {
                reap_one(&send_cq, &mut guard, "completion")?;
            }
        }
    }
    Ok(finish(clk, posts))
}
