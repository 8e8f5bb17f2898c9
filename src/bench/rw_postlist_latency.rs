//! rw-postlist-latency: how long a postlist takes from doorbell to the completion of its last WR
//! (the only one signaled). Server threads post; client threads are passive targets. Reports the
//! average, median and 99th percentile per thread.

use clap::{CommandFactory, Parser};

use super::rw_tput::{validate as validate_rw, RwFlags};
use crate::error::{Error, Result};
use crate::framework::{
    self, counts_at_least_one, fill_byte, slot_stride, Benchmark, CommonArgs, Family, Meter,
    Output, Pair, PairSpec, Plan, Role, ThreadCtx,
};
use crate::hot::{poll_one, SendBatch};
use crate::stats::{CycleClock, JsonObject, LatencySummary, Stamp};

/// rw-postlist-latency's command line: rw-tput's flags plus the sample count.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-postlist-latency",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Postlist latency (ATC'16 rdma_bench): doorbell to last completion, avg/median/99th"
)]
pub(crate) struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub flags: RwFlags,
    /// Latency samples per thread; the run ends when they are collected (or at --duration)
    #[arg(long, default_value_t = 1024 * 1024, value_parser = crate::units::count::<usize>)]
    pub samples: usize,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8192, value_parser = crate::units::count::<usize>)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

fn entry() -> Result<()> {
    let a = Args::parse();
    let f = &a.flags;
    validate_rw(f, a.buf_size, &a.common)?;
    counts_at_least_one(&[("--samples", a.samples as u64)])?;
    let pair = f.pair(BENCH.name, &a.common, !f.topo.is_client, a.buf_size);
    if pair.active {
        framework::run(&Sampler { a: &a, pair }, &a.common)?;
    } else {
        framework::run(&f.target(pair), &a.common)?;
    }
    Ok(())
}

/// The active side: one postlist at a time, its last WR signaled, timed doorbell to completion.
struct Sampler<'a> {
    a: &'a Args,
    pair: PairSpec<'a>,
}

/// A sampling thread: its pair, the postlist and the samples.
struct Sampling {
    pair: Pair,
    batch: SendBatch,
    clock: CycleClock,
    samples: Vec<Stamp>,
}

impl Role for Sampler<'_> {
    type Thread = Sampling;

    fn plan(&self) -> Plan {
        self.pair.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Sampling> {
        let mut pair = self.pair.connect(ctx)?;
        let remote = pair.remote_buf();
        let (qp, mr) = pair.ep.parts();
        let mut batch = SendBatch::new(qp, mr, self.a.flags.send_spec(), Some(remote))?;
        let last = batch.len() - 1;
        batch.set_signaled(last, true);
        Ok(Sampling {
            pair,
            batch,
            clock: CycleClock::new(),
            samples: Vec::with_capacity(self.a.samples),
        })
    }

    fn measure(&self, s: &mut Sampling, m: &mut Meter<'_>) -> Result<()> {
        let (batch, qp, clock) = (&mut s.batch, s.pair.ep.qp_mut(), &s.clock);
        let timeout = m.poll_timeout();
        let postlist = u64::from(self.a.flags.postlist);
        let limit = self.a.common.op_limit();
        let mut ops = 0u64;
        m.start();
        while m.checkpoint() && s.samples.len() < self.a.samples && ops < limit {
            let t0 = clock.stamp();
            batch.post(qp)?;
            poll_one(qp.send_cq(), timeout)?;
            s.samples.push(CycleClock::ticks(t0, clock.stamp()));
            ops += postlist;
            m.count(ops);
        }
        Ok(())
    }

    fn explain(&self, s: &Sampling, e: Error, measured: bool) -> Error {
        s.pair.lost(e, measured)
    }

    fn finish(&self, s: Sampling, ctx: &ThreadCtx<'_>) -> Result<()> {
        let f = &self.a.flags;
        let ticks_per_us = s.clock.ticks_per_us();
        let mut samples_us: Vec<f64> = s.samples.iter().map(|&c| c as f64 / ticks_per_us).collect();
        if self.a.common.verify && f.do_read {
            let expect = fill_byte(false, ctx.global_id);
            let stride = slot_stride(f.size);
            s.pair
                .verify_slots(s.batch.len(), f.size, stride, expect, "READ")?;
        }
        if let Some(l) = LatencySummary::from_samples(&mut samples_us) {
            report_latency(&l, ctx.global_id, self.a.common.json);
        }
        s.pair.finish()
    }
}

/// rw-postlist-latency.
pub static BENCH: Benchmark = Benchmark {
    name: "rw-postlist-latency",
    family: Family::Microbenchmark,
    roles: crate::framework::SERVER_POSTS,
    reports: "server",
    op: "WRITE",
    output: Output::RateAndLatency,
    suite: &["--size 8 --postlist 1 --samples 100000"],
    command: Args::command,
    entry,
};

fn report_latency(l: &LatencySummary, global_id: usize, json: bool) {
    println!(
        "main: Server {global_id}: Average latency = {:.2}us, median = {:.2}us, 99th = {:.2}us ({} samples)",
        l.average_us, l.median_us, l.p99_us, l.samples
    );
    if json {
        let o = JsonObject::new()
            .str("bench", "rw-postlist-latency")
            .str("role", "server")
            .int("thread", global_id as u64)
            .bool("latency", true)
            .int("samples", l.samples as u64)
            .num("average_us", l.average_us)
            .num("median_us", l.median_us)
            .num("p99_us", l.p99_us);
        println!("{}", o.finish());
    }
}
