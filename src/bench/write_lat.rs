//! write-lat: RDMA WRITE ping-pong latency, measured as perftest's `ib_write_lat` does, so the two
//! can be compared like for like. Not one of the paper's benchmarks (rw-postlist-latency times a
//! doorbell to its completion instead).
//!
//! The client WRITEs iteration number `i` into the last byte of the server's receive slot; the
//! server spins on that byte in its own memory, then WRITEs `i` back; the client spins likewise,
//! then sends `i + 1`. Every WRITE is signaled and its completion reaped before the next one.
//! Each side stamps every post; a latency sample is half the time between two consecutive posts
//! (one round trip), and the report drops the two largest samples, as perftest does.

use std::time::{Duration, Instant};

use clap::Parser;

use super::common::{check_inline, flag01, require, slot_stride, CommonArgs, Topology};
use super::connected::{connect_pair, finish_active, transport_loss, Connected, Pair};
use super::runner::{run_threads, Role};
use crate::control::stop_requested;
use crate::error::{Error, Result};
use crate::hot::{poll_one, Op, PollTimeout, SendBatch, SendSpec};
use crate::registry::Registry;
use crate::stats::{Counters, CycleClock, JsonObject, RunInfo, Stamp};

/// Iterations when neither --iters nor --duration is given (ib_write_lat's -n default).
const DEFAULT_ITERS: u64 = 1000;
/// Largest samples left out of the statistics (perftest's LAT_MEASURE_TAIL).
const MEASURE_TAIL: usize = 2;
/// Empty spins between looks at the clock and the registry while waiting for the peer.
const SPINS_PER_CHECK: u32 = 1 << 16;

/// write-lat's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "write-lat",
    version,
    args_override_self = true,
    about = "RDMA WRITE ping-pong latency, as perftest's ib_write_lat (half round trip, perftest's columns)"
)]
pub struct Args {
    /// 1: this process is the client (sends first); 0: the server
    #[arg(long, alias = "is_client", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub is_client: bool,
    /// Bytes per WRITE (ib_write_lat's default is 2)
    #[arg(long, default_value_t = 2)]
    pub size: u64,
    /// 1: WRITEs carry their payload inline; 0: from the MR
    #[arg(long, default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub inline: bool,
    /// Inline limit requested from the QP
    #[arg(long, alias = "max_inline", default_value_t = 60)]
    pub max_inline: u32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    require(a.size >= 1, || "size must be at least 1 byte".into())?;
    require(a.size <= 1 << 20, || {
        format!("size {} is above write-lat's 1 MiB", a.size)
    })?;
    require(a.common.iters.is_none_or(|n| n >= 2), || {
        "iters must be at least 2 (a sample is the time between two posts)".into()
    })?;
    if a.inline {
        check_inline(a.size, a.max_inline, "WRITEs")?;
    }
    Ok(())
}

/// Runs write-lat.
pub fn run(a: Args) -> Result<()> {
    validate(&a)?;
    let mut common = a.common.clone();
    if common.iters.is_none() && common.duration.is_none() {
        common.iters = Some(DEFAULT_ITERS);
    }
    let stride = slot_stride(a.size);
    let topo = Topology::single(a.is_client);
    let c = Connected {
        bench: "write-lat",
        topo: &topo,
        common: &common,
        active: true,
        use_uc: false,
        do_read: false,
        size: a.size,
        postlist: 1,
        queue_depth: 16,
        max_inline: a.max_inline,
        // Slot 0 is what this side sends, slot 1 where the peer's WRITEs land.
        buf_size: 2 * stride,
        wr_api: false,
        written_slots: (0, stride),
    };
    let info = RunInfo {
        bench: "write-lat",
        role: topo.role_name(),
        op: "WRITE",
        size: a.size,
        postlist: 1,
        first_id: 0,
        json: common.json,
    };
    run_threads(info, Role::Counting, 1, &common, |t, counters| {
        let mut pair = connect_pair(&c, 0)?;
        let (iters, samples, failure) = ping_pong(&a, &common, &mut pair, stride, t, counters)?;
        // The samples taken before a failure are still reported.
        if !report(&samples, a.size, iters, common.json) {
            println!(
                "main: write-lat: fewer than {} round trips, no latency to report",
                MEASURE_TAIL + 2
            );
        }
        if let Some(e) = failure {
            return Err(transport_loss(e, &pair.peer, iters > 0));
        }
        finish_active(&mut pair)
    })?;
    Ok(())
}

/// The ping-pong loop; returns the WRITEs posted, the gaps between consecutive posts (round
/// trips) in microseconds, and the error that ended it early, if one did.
fn ping_pong(
    a: &Args,
    common: &CommonArgs,
    pair: &mut Pair,
    stride: usize,
    t: usize,
    counters: &Counters,
) -> Result<(u64, Vec<f64>, Option<Error>)> {
    let size = a.size as usize;
    let spec = SendSpec {
        op: Op::Write,
        postlist: 1,
        size: a.size as u32,
        stride,
        local_offset: 0,
        remote_offset: stride as u64,
        inline: a.inline,
    };
    let remote = pair.remote_buf();
    let mut waiter = PeerWait::new(&pair.reg, &pair.peer, pair.remote.run_id);
    let (qp, mr) = pair.ep.parts();
    let mut batch = SendBatch::new(qp, mr, spec, Some(remote))?;
    batch.set_signaled(0, true);
    let mr = std::sync::Arc::clone(mr);
    let (send_byte, recv_byte) = (size - 1, stride + size - 1);
    let timeout = PollTimeout::default();
    let limit = common.op_limit();
    let clock = CycleClock::new();
    // Room for 1 Mi stamps (8 MiB) up front; only longer --duration runs ever grow it.
    let mut posts: Vec<Stamp> = Vec::with_capacity(limit.saturating_add(1).min(1 << 20) as usize);
    let mut n = 0u64;
    let mut failure = None;
    counters.start(t);
    while n < limit && !stop_requested() {
        let seq = (n + 1) as u8;
        if !a.is_client || n > 0 {
            // The server answers WRITE i; the client waits for the answer to its previous one.
            let expect = if a.is_client { n as u8 } else { seq };
            // Only the peer's WRITEs store there; a one-byte atomic load cannot tear.
            match waiter.until(|| mr.load_u8(recv_byte) == expect) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        posts.push(clock.stamp());
        // The previous WRITE from this byte has completed (its CQE was reaped below).
        mr.store_u8(send_byte, seq);
        if let Err(e) = batch
            .post(qp)
            .and_then(|()| poll_one(qp.send_cq(), timeout))
        {
            failure = Some(e);
            break;
        }
        n += 1;
        counters.set(t, n);
    }
    counters.stop(t);
    if a.is_client && n > 0 && failure.is_none() {
        // The answer to the last WRITE closes the last round trip (and tells the server we saw it).
        let last = n as u8;
        match waiter.until(|| mr.load_u8(recv_byte) == last) {
            Ok(true) => posts.push(clock.stamp()),
            Ok(false) => {}
            Err(e) => failure = Some(e),
        }
    }
    let ticks_per_us = clock.ticks_per_us();
    let round_trips = posts
        .windows(2)
        .map(|w| CycleClock::ticks(w[0], w[1]) as f64 / ticks_per_us)
        .collect();
    Ok((n, round_trips, failure))
}

/// Spinning on our memory for the peer's WRITE, bounded: gives up (Ok(false)) on a stop request or
/// once the peer says it is done, and fails when nothing arrives for the poll timeout.
struct PeerWait<'a> {
    reg: &'a Registry,
    peer: &'a str,
    /// The run whose `done` marker counts.
    peer_run: u64,
    /// The registry key the peer marks when it is done.
    peer_done: String,
    timeout: Duration,
}

impl<'a> PeerWait<'a> {
    fn new(reg: &'a Registry, peer: &'a str, peer_run: u64) -> Self {
        PeerWait {
            reg,
            peer,
            peer_run,
            peer_done: format!("{peer}-done"),
            timeout: PollTimeout::default().0,
        }
    }

    #[inline(always)]
    fn until(&mut self, mut arrived: impl FnMut() -> bool) -> Result<bool> {
        let mut spins: u32 = 0;
        let mut since: Option<Instant> = None;
        loop {
            if arrived() {
                return Ok(true);
            }
            if stop_requested() {
                return Ok(false);
            }
            spins = spins.wrapping_add(1);
            if spins % SPINS_PER_CHECK == 0 {
                let t0 = *since.get_or_insert_with(Instant::now);
                if self.reg.is_ready(&self.peer_done, Some(self.peer_run))? {
                    return Ok(false);
                }
                if t0.elapsed() > self.timeout {
                    return Err(Error::timeout(
                        format!("no WRITE from {}", self.peer),
                        self.timeout,
                        Some("the peer is gone or stuck"),
                    ));
                }
            }
        }
    }
}

/// perftest's latency statistics over round trips (µs): halves, sorted, the largest
/// `MEASURE_TAIL` (2) dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PingPongStats {
    /// Samples the statistics cover.
    pub samples: usize,
    /// Smallest.
    pub min_us: f64,
    /// Largest kept.
    pub max_us: f64,
    /// Median (perftest's t_typical).
    pub typical_us: f64,
    /// Mean.
    pub avg_us: f64,
    /// Standard deviation.
    pub stdev_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p99_9_us: f64,
}

impl PingPongStats {
    /// Statistics of `round_trips_us`; None with too few samples to drop the tail.
    pub fn from_round_trips(round_trips_us: &[f64]) -> Option<Self> {
        let mut half: Vec<f64> = round_trips_us.iter().map(|rt| rt / 2.0).collect();
        half.sort_by(|a, b| a.total_cmp(b));
        half.truncate(half.len().checked_sub(MEASURE_TAIL)?);
        let n = half.len();
        if n == 0 {
            return None;
        }
        let avg = half.iter().sum::<f64>() / n as f64;
        let var = half.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n as f64;
        let pct = |p: f64| half[((n as f64 * p).ceil() as usize).clamp(1, n) - 1];
        let typical = if n % 2 == 1 {
            half[n / 2]
        } else {
            (half[n / 2 - 1] + half[n / 2]) / 2.0
        };
        Some(PingPongStats {
            samples: n,
            min_us: half[0],
            max_us: half[n - 1],
            typical_us: typical,
            avg_us: avg,
            stdev_us: var.sqrt(),
            p99_us: pct(0.99),
            p99_9_us: pct(0.999),
        })
    }
}

/// Prints perftest's latency table (and a JSON line); false when there was too little to report.
fn report(round_trips_us: &[f64], size: u64, iters: u64, json: bool) -> bool {
    let Some(s) = PingPongStats::from_round_trips(round_trips_us) else {
        return false;
    };
    let rule = "-".repeat(87);
    println!("{rule}");
    println!(
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
    );
    println!(
        " {:<7} {:<10}     {:<7.2}        {:<7.2}      {:<7.2}          {:<7.2}        {:<7.2}        {:<7.2}                {:<7.2}",
        size,
        iters,
        s.min_us,
        s.max_us,
        s.typical_us,
        s.avg_us,
        s.stdev_us,
        s.p99_us,
        s.p99_9_us
    );
    println!("{rule}");
    if json {
        let o = JsonObject::new()
            .str("bench", "write-lat")
            .bool("latency", true)
            .int("size", size)
            .int("iterations", iters)
            .int("samples", s.samples as u64)
            .num("t_min_us", s.min_us)
            .num("t_max_us", s.max_us)
            .num("t_typical_us", s.typical_us)
            .num("t_avg_us", s.avg_us)
            .num("t_stdev_us", s.stdev_us)
            .num("p99_us", s.p99_us)
            .num("p99_9_us", s.p99_9_us);
        println!("{}", o.finish());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_halve_round_trips_and_drop_the_two_largest() {
        // Round trips 2, 4, …, 20 µs plus two outliers: halves 1..=10 remain.
        let mut rt: Vec<f64> = (1..=10).map(|i| f64::from(2 * i)).collect();
        rt.extend([1000.0, 5000.0]);
        let s = PingPongStats::from_round_trips(&rt).unwrap();
        assert_eq!(s.samples, 10);
        assert_eq!((s.min_us, s.max_us), (1.0, 10.0));
        assert_eq!(s.typical_us, 5.5);
        assert_eq!(s.avg_us, 5.5);
        assert!((s.stdev_us - 8.25f64.sqrt()).abs() < 1e-12);
        assert_eq!((s.p99_us, s.p99_9_us), (10.0, 10.0));
        assert!(PingPongStats::from_round_trips(&[1.0, 2.0]).is_none());
    }
}
