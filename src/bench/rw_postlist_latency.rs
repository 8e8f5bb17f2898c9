//! rw-postlist-latency: how long a postlist takes from doorbell to the completion of its last WR
//! (the only one signaled). Server threads post; client threads are passive targets. Reports the
//! average, median and 99th percentile per thread.

use std::time::Instant;

use clap::Parser;

use super::common::{fill_byte, slot_stride, CommonArgs};
use super::runner::{run_threads, Role};
use super::rw_tput::{
    connect_pair, finish_active, passive, validate as validate_rw, verify_slots, Pair, PairSpec,
    RwFlags,
};
use crate::error::{Error, Result};
use crate::hot::{poll_one, stop_requested, Op, PollTimeout, Remote, SendBatch, SendSpec};
use crate::stats::{JsonObject, LatencySummary, RunInfo};

/// rw-postlist-latency's command line: rw-tput's flags plus the sample count.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-postlist-latency",
    version,
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
    let active = !f.is_client;
    let first_id = if f.is_client {
        f.machine_id * f.num_threads
    } else {
        0
    };
    let info = RunInfo {
        bench: "rw-postlist-latency",
        role: if f.is_client { "Client" } else { "Server" },
        op: if f.do_read { "READ" } else { "WRITE" },
        size: f.size,
        postlist: u64::from(f.postlist),
        first_id,
        json: a.common.json,
    };
    println!("main: Using {} threads", f.num_threads);
    let role = if active {
        Role::Counting
    } else {
        Role::Passive
    };
    run_threads(info, role, f.num_threads, &a.common, |t, counters| {
        let gid = first_id + t;
        let spec = PairSpec {
            is_client: f.is_client,
            active,
            use_uc: f.use_uc,
            dual_port: f.dual_port,
            queue_depth: f.queue_depth,
            max_inline: f.max_inline,
            buf_size: a.buf_size,
        };
        let pair = connect_pair(&a.common, &spec, gid)?;
        let stride = slot_stride(f.size);
        if !active {
            return passive(
                &pair,
                &a.common,
                (!f.do_read).then_some((f.postlist as usize, f.size, stride)),
                gid,
            );
        }
        let Pair {
            ep,
            reg,
            remote,
            me,
            ..
        } = &pair;
        let send = SendSpec {
            op: if f.do_read { Op::Read } else { Op::Write },
            postlist: f.postlist as usize,
            size: f.size as u32,
            stride,
            local_offset: 0,
            remote_offset: 0,
            inline: !f.do_read,
        };
        let r = Remote {
            addr: remote.info.buf_addr,
            rkey: remote.info.rkey,
            len: remote.info.buf_size,
        };
        let mut batch = SendBatch::new(&ep.qp, &ep.mr, send, Some(r))?;
        let last = batch.len() - 1;
        batch.set_signaled(last, true);
        let timeout = PollTimeout::default();
        let mut samples_us: Vec<f64> = Vec::with_capacity(a.samples);
        let postlist = u64::from(f.postlist);
        let mut ops = 0u64;
        counters.start(t);
        while !stop_requested() && samples_us.len() < a.samples {
            let t0 = Instant::now();
            batch.post()?;
            poll_one(ep.qp.send_cq(), timeout)?;
            samples_us.push(t0.elapsed().as_secs_f64() * 1e6);
            ops += postlist;
            counters.set(t, ops);
        }
        counters.stop(t);
        if a.common.verify && f.do_read {
            verify_slots(
                ep,
                batch.len(),
                f.size,
                stride,
                fill_byte(false, gid),
                "READ",
            )?;
        }
        if let Some(l) = LatencySummary::from_samples(&mut samples_us) {
            println!(
                "main: Server {gid}: Average latency = {:.2}us, median = {:.2}us, 99th = {:.2}us ({} samples)",
                l.average_us, l.median_us, l.p99_us, l.samples
            );
            if a.common.json {
                let o = JsonObject::new()
                    .str("bench", "rw-postlist-latency")
                    .str("role", "server")
                    .int("thread", gid as u64)
                    .bool("latency", true)
                    .int("samples", l.samples as u64)
                    .num("average_us", l.average_us)
                    .num("median_us", l.median_us)
                    .num("p99_us", l.p99_us);
                println!("{}", o.finish());
            }
        }
        finish_active(reg, me)
    })?;
    Ok(())
}
