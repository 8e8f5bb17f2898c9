//! rw-postlist-latency: how long a postlist takes from doorbell to the completion of its last WR
//! (the only one signaled). Server threads post; client threads are passive targets. Reports the
//! average, median and 99th percentile per thread.

use clap::Parser;

use super::common::{fill_byte, slot_stride, CommonArgs};
use super::connected::{finish_active, run_connected, verify_slots};
use super::rw_tput::{validate as validate_rw, RwFlags};
use crate::control::stop_requested;
use crate::error::{Error, Result};
use crate::hot::{poll_one, PollTimeout, SendBatch};
use crate::stats::{CycleClock, JsonObject, LatencySummary, Stamp};

/// rw-postlist-latency's command line: rw-tput's flags plus the sample count.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-postlist-latency",
    version,
    args_override_self = true,
    about = "Postlist latency (ATC'16 rdma_bench): doorbell to last completion, avg/median/99th"
)]
pub struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub flags: RwFlags,
    /// Latency samples per thread; the run ends when they are collected (or at --duration)
    #[arg(long, default_value_t = 1024 * 1024)]
    pub samples: usize,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8192)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Runs rw-postlist-latency.
pub fn run(a: Args) -> Result<()> {
    let f = &a.flags;
    validate_rw(f, a.buf_size, &a.common)?;
    if a.samples == 0 {
        return Err(Error::config("samples must be at least 1"));
    }
    let stride = slot_stride(f.size);
    let c = f.connected(
        "rw-postlist-latency",
        &a.common,
        !f.topo.is_client,
        a.buf_size,
    );
    run_connected(&c, |pair, global_id, t, counters| {
        let remote = pair.remote_buf();
        let (qp, mr) = pair.ep.parts();
        let mut batch = SendBatch::new(qp, mr, f.send_spec(), Some(remote))?;
        let last = batch.len() - 1;
        batch.set_signaled(last, true);
        let timeout = PollTimeout::default();
        let clock = CycleClock::new();
        let mut samples: Vec<Stamp> = Vec::with_capacity(a.samples);
        let postlist = u64::from(f.postlist);
        let mut ops = 0u64;
        counters.start(t);
        let limit = a.common.op_limit();
        while !stop_requested() && samples.len() < a.samples && ops < limit {
            let t0 = clock.stamp();
            batch.post(qp)?;
            poll_one(qp.send_cq(), timeout)?;
            samples.push(CycleClock::ticks(t0, clock.stamp()));
            ops += postlist;
            counters.set(t, ops);
        }
        counters.stop(t);
        let ticks_per_us = clock.ticks_per_us();
        let mut samples_us: Vec<f64> = samples.iter().map(|&c| c as f64 / ticks_per_us).collect();
        if a.common.verify && f.do_read {
            let expect = fill_byte(false, global_id);
            verify_slots(&pair.ep, batch.len(), f.size, stride, expect, "READ")?;
        }
        if let Some(l) = LatencySummary::from_samples(&mut samples_us) {
            report_latency(&l, global_id, a.common.json);
        }
        finish_active(pair)
    })
}

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
