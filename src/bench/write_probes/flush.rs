//! write-flush: how long it takes to "flush" WRITEs from the remote NIC to the remote CPU by
//! reading them back.
//!
//! The client posts, with one doorbell, a chain of `--num-writes` pairs: an unsignaled 16-byte
//! inline WRITE to remote offset `i·64`, then an unsignaled 16-byte READ of the same remote bytes
//! (the last READ signaled). The latency is from the doorbell to the last READ's completion; it
//! prints the average, median and 99th percentile once a second, and the distribution at the end.
//! The server is a passive target; with `--check 1` it looks once a second (as the original) at
//! whether the word at offset 64 is newer than the word at offset 0, which the chain's order
//! would forbid, and counts such observations.

use clap::{CommandFactory, Parser};

use super::{done_when_due, full_fence, role_name, summary_json, Histogram, Pace, Peer, TwoSided};
use crate::error::{Error, Result};
use crate::framework::{flag01, peer_lost, require, Benchmark, CommonArgs, Family, Meter, Output};
use crate::hot::{poll_one, Op, SendBatch, SendSpec};
use crate::stats::{CycleClock, JsonObject};

const NAME: &str = "write-flush";
/// Registered buffer on each side (kAppBufSize).
pub const BUF_SIZE: usize = 4096;
/// Bytes per WRITE and READ (kAppDataSize), inlined.
pub const DATA_SIZE: u32 = 16;
/// Pair `i` targets remote offset `i × 64`; its READ lands at local offset `i × 64 + 32`.
const SLOT: usize = 64;
/// The send queue depth (libhrd's): a chain of 2 × num-writes WRs must fit.
const QUEUE_DEPTH: usize = 128;
/// The most WRITE+READ pairs a chain holds.
pub const MAX_WRITES: usize = QUEUE_DEPTH / 2;

/// write-flush's command line: the original's `--is-client`, its kAppNumWrites as a flag, and the
/// common flags.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "write-flush",
    // Stability mode is for the rate benchmarks: refused here, so not listed.
    mut_arg("stats_interval", |a| a.hide(true)),
    mut_arg("stats_file", |a| a.hide(true)),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Latency to flush WRITEs with a READ (ATC'16 rdma_bench): chains of (16-byte inline \
             WRITE, READ of the same bytes) pairs in one doorbell, doorbell to the last READ's \
             completion"
)]
pub(crate) struct Args {
    /// 1: this process is the client (it measures), 0: the server (a passive target)
    #[arg(long, alias = "is_client", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub is_client: bool,
    /// WRITE+READ pairs per chain (kAppNumWrites); pair i targets remote offset i x 64
    #[arg(long, alias = "num_writes", default_value_t = 2, value_name = "N", value_parser = crate::units::count::<usize>)]
    pub num_writes: usize,
    /// Server: once a second, check that the word at offset 64 is not newer than the word at
    /// offset 0 and report what is observed (the original's monitor)
    #[arg(long, default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub check: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    a.common.refuse_stability(NAME)?;
    require((1..=MAX_WRITES).contains(&a.num_writes), || {
        format!(
            "num-writes must be between 1 and {MAX_WRITES} (2 WRs per pair in a {QUEUE_DEPTH}-deep \
             send queue), not {}",
            a.num_writes
        )
    })
}

fn entry() -> Result<()> {
    let a = Args::parse();
    validate(&a)?;
    TwoSided::run(NAME, &a, &a.common, a.is_client, BUF_SIZE, client, server)
}

fn client(a: &Args, peer: &mut Peer, m: &mut Meter<'_>) -> Result<()> {
    let n = a.num_writes;
    let remote = peer.remote_buf();
    // WR 2i is pair i's WRITE (local and remote offset i·64); WR 2i+1 its READ, built at offset
    // i·64 + 32 and pointed back at remote offset i·64 below.
    let spec = SendSpec {
        op: Op::Write,
        postlist: 2 * n,
        size: DATA_SIZE,
        stride: SLOT / 2,
        local_offset: 0,
        remote_offset: 0,
        inline: false,
    };
    let peer_name = peer.peer.clone();
    let (qp, mr) = peer.ep.parts();
    let mut batch = SendBatch::new(qp, mr, spec, Some(remote))?;
    for i in 0..n {
        batch.set_inline(2 * i, true)?;
        batch.retarget(2 * i + 1, Op::Read, (i * SLOT) as u64)?;
    }
    batch.set_signaled(2 * n - 1, true);
    println!("main: Client ready: {n} WRITE+READ pair(s) of {DATA_SIZE} bytes per doorbell");
    let timeout = m.poll_timeout();
    let limit = a.common.op_limit();
    let tsc = CycleClock::new();
    let (mut all, mut window) = (Histogram::new(), Histogram::new());
    let mut pace = Pace::new();
    let mut iter = 0u64;
    let ended: Result<()> = loop {
        if iter >= limit {
            break Ok(());
        }
        iter += 1;
        for i in 0..n {
            mr.store_u64(i * SLOT, iter);
            mr.store_u64(i * SLOT + 8, iter);
        }
        let t0 = tsc.stamp();
        let r = batch
            .post(qp)
            .and_then(|()| poll_one(qp.send_cq(), timeout));
        let ticks = CycleClock::ticks(t0, tsc.stamp());
        if let Err(e) = r {
            break Err(peer_lost(e, &peer_name, iter > 1));
        }
        all.record(ticks);
        window.record(ticks);
        if !iter.is_multiple_of(16) {
            continue;
        }
        if pace.poll().report {
            report_window(&window, tsc.ticks_per_us(), pace.elapsed_s(), a.common.json);
            window.clear();
        }
        if !m.checkpoint() {
            break Ok(());
        }
    };
    let verified = if a.common.verify && ended.is_ok() && all.count() > 0 {
        verify_reads(mr, n, iter).map(Some)
    } else {
        Ok(None)
    };
    summarize(a, &all, tsc.ticks_per_us(), pace.elapsed_s(), &ended);
    ended?;
    if let Some(pairs) = verified? {
        println!(
            "main: verify ok: the last chain's {pairs} READ(s) returned its WRITEs' value {iter}"
        );
    }
    Ok(())
}

/// Every READ of the last chain must have returned the value its WRITE carried.
fn verify_reads(mr: &crate::verbs::MemoryRegion, n: usize, iter: u64) -> Result<usize> {
    for i in 0..n {
        let got = mr.load_u64(i * SLOT + SLOT / 2);
        if got != iter {
            return Err(Error::Verify(format!(
                "READ {i} returned {got}, not the value {iter} its WRITE carried"
            )));
        }
    }
    Ok(n)
}

fn report_window(h: &Histogram, ticks_per_us: f64, elapsed_s: f64, json: bool) {
    let (Some((avg, _, _)), Some(p50), Some(p99)) =
        (h.mean_min_max(), h.percentile(0.5), h.percentile(0.99))
    else {
        return;
    };
    let us = |t: f64| t / ticks_per_us;
    println!(
        "main: Client: avg {:.1} us, 50 {:.1} us, 99 {:.1} us ({} flushes)",
        us(avg),
        us(p50),
        us(p99),
        h.count()
    );
    if json {
        let o = JsonObject::new()
            .str("bench", NAME)
            .str("role", "client")
            .num("elapsed_s", elapsed_s)
            .int("samples", h.count())
            .num("avg_us", us(avg))
            .num("p50_us", us(p50))
            .num("p99_us", us(p99));
        println!("{}", o.finish());
    }
}

fn summarize(a: &Args, h: &Histogram, ticks_per_us: f64, elapsed_s: f64, ended: &Result<()>) {
    if let Err(e) = ended {
        println!("main: run failed: {e}");
    }
    let us = |t: f64| t / ticks_per_us;
    let p = |q: f64| us(h.percentile(q).unwrap_or(0.0));
    let Some((avg, min, max)) = h.mean_min_max() else {
        println!("main: Client: no flush completed");
        return;
    };
    let (min, max) = (us(min as f64), us(max as f64));
    println!(
        "main: Client: flush latency over {} samples ({} pair(s)): min {min:.2} us, median {:.2} us, \
         99th {:.2} us, 99.9th {:.2} us, max {max:.2} us (avg {:.2} us)",
        h.count(),
        a.num_writes,
        p(0.5),
        p(0.99),
        p(0.999),
        us(avg)
    );
    if a.common.json {
        let o = summary_json(NAME, Some("client"), ended.as_ref().err())
            .int("num_writes", a.num_writes as u64)
            .num("elapsed_s", elapsed_s)
            .int("samples", h.count())
            .num("avg_us", us(avg))
            .num("min_us", min)
            .num("median_us", p(0.5))
            .num("p99_us", p(0.99))
            .num("p999_us", p(0.999))
            .num("max_us", max);
        println!("{}", o.finish());
    }
}

fn server(a: &Args, peer: &Peer, m: &mut Meter<'_>) -> Result<()> {
    let mr = peer.ep.mr();
    println!("main: Server ready. Going to sleep.");
    let mut pace = Pace::new();
    let (mut checks, mut observations) = (0u64, 0u64);
    let ended = loop {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if !m.checkpoint() {
            break Ok(());
        }
        let due = pace.poll();
        if due.report && a.check {
            let val2 = mr.load_u64(SLOT);
            full_fence();
            let val1 = mr.load_u64(0);
            checks += 1;
            if val2 > val1 {
                observations += 1;
                println!(
                    "main: Server: observed: the word at offset 64 ({val2}) is newer than the word at offset 0 ({val1})"
                );
            }
        }
        match done_when_due(peer, &due) {
            Ok(false) => {}
            Ok(true) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    if let Err(e) = &ended {
        println!("main: run failed: {e}");
    }
    if a.check {
        println!(
            "main: {}: {checks} checks of the words at offsets 0 and 64, {observations} with the later word newer",
            role_name(false)
        );
    }
    println!("main: Server: done");
    if a.common.json {
        let o = summary_json(NAME, Some("server"), ended.as_ref().err())
            .bool("passive", true)
            .num("elapsed_s", pace.elapsed_s())
            .int("checks", checks)
            .int("observations", observations);
        println!("{}", o.finish());
    }
    ended
}

/// write-flush.
pub static BENCH: Benchmark = Benchmark {
    name: NAME,
    family: Family::Probe,
    roles: super::ROLES,
    reports: "client",
    op: "WRITE",
    output: Output::Probe,
    suite: &[],
    command: Args::command,
    entry,
};
