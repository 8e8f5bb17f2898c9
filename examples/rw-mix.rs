//! rw-mix: remote READs and WRITEs mixed in every postlist (each WR is a READ with probability
//! `--read-pct`), server threads posting to passive client threads. An experiment of your own
//! on rdma-bench's framework, in one file; docs/extending.md walks through it.
//!
//!     cargo build --release --examples && bench_scripts/run-local.sh rw-mix --read-pct 30

use clap::{CommandFactory, Parser};
use rdma_bench::framework::{
    self, require, slot_stride, Benchmark, CommonArgs, Family, Meter, Output, Pair, PairSpec, Plan,
    QueueArgs, Role, ThreadCtx, Topology, SERVER_POSTS,
};
use rdma_bench::hot::{Op, Postlist, SendBatch, SendSpec};
use rdma_bench::{Error, Result};

/// rw-mix's own flags, then those every benchmark shares.
#[derive(Parser, Debug)]
#[command(
    name = "rw-mix",
    version,
    about = "Mixed remote READ/WRITE rate: each WR of a \
    postlist is a READ with probability --read-pct, else an inlined WRITE"
)]
struct Args {
    #[command(flatten)]
    topo: Topology,
    /// Percentage of READs among the WRs
    #[arg(long, default_value_t = 50)]
    read_pct: u64,
    /// Bytes per READ or WRITE (WRITEs are inlined: at most --max-inline)
    #[arg(long, default_value_t = 32)]
    size: u64,
    /// WRs per doorbell
    #[arg(long, default_value_t = 1)]
    postlist: u32,
    #[command(flatten)]
    queue: QueueArgs,
    #[command(flatten)]
    common: CommonArgs,
}

/// What the tools around a benchmark (run-local.sh, compare, plot, list) need to know of it.
static BENCH: Benchmark = Benchmark {
    name: "rw-mix",
    family: Family::Microbenchmark,
    roles: SERVER_POSTS,
    reports: "server",
    op: "MIX",
    output: Output::Rate,
    suite: &["--read-pct 50"],
    command: Args::command,
    entry,
};

fn main() {
    framework::main(&BENCH)
}

/// Parse, refuse what cannot work, and play this process's side.
fn entry() -> Result<()> {
    let a = Args::parse();
    a.common.check()?;
    a.topo.check()?;
    a.queue.check(a.postlist, 64)?;
    require(a.read_pct <= 100, || "--read-pct is above 100".into())?;
    let inlinable = (1..=u64::from(a.queue.max_inline)).contains(&a.size);
    require(inlinable, || "--size must be 1 ..= --max-inline".into())?;
    // Server thread i meets client thread i: one RC QP and a buffer of postlist slots each.
    let buf = a.postlist as usize * slot_stride(a.size);
    let pair = PairSpec::new(BENCH.name, BENCH.op, &a.topo, &a.queue, &a.common)
        .shaped(a.size, a.postlist, buf);
    if pair.active {
        framework::run(&Mixer { a: &a, pair }, &a.common)?;
    } else {
        framework::run(&pair.target(), &a.common)?;
    }
    Ok(())
}

/// The active side; each of its threads has its pair and one prebuilt postlist.
struct Mixer<'a> {
    a: &'a Args,
    pair: PairSpec<'a>,
}

impl Role for Mixer<'_> {
    type Thread = (Pair, SendBatch);

    fn plan(&self) -> Plan {
        self.pair.plan()
    }

    /// Connect, and build the postlist once: slot i at i·round_up(size, 64) on both sides.
    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<(Pair, SendBatch)> {
        let mut pair = self.pair.connect(ctx)?;
        let spec = SendSpec::slots(Op::Write, self.a.postlist as usize, self.a.size as u32);
        let remote = pair.remote_buf();
        let (qp, mr) = pair.ep.parts();
        let batch = SendBatch::new(qp, mr, spec, Some(remote))?;
        Ok((pair, batch))
    }

    /// The hot loop: draw each WR's operation, post the postlist (one doorbell, one signaled WR
    /// per --unsig-batch), count; the checkpoint says when to stop.
    fn measure(&self, (pair, batch): &mut (Pair, SendBatch), m: &mut Meter<'_>) -> Result<()> {
        let qp = pair.ep.qp_mut();
        let (mut counter, timeout) = (self.a.queue.counter(), m.poll_timeout());
        let stride = slot_stride(self.a.size) as u64;
        let mut seed = 0x9e37_79b9_7f4a_7c15 ^ m.thread() as u64;
        let (mut ops, limit) = (0u64, self.a.common.op_limit());
        m.start();
        while m.checkpoint() && ops < limit {
            for i in 0..batch.len() {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                if (seed >> 33) % 100 < self.a.read_pct {
                    batch.set_inline(i, false)?; // a READ's payload lands locally
                    batch.retarget(i, Op::Read, i as u64 * stride)?;
                } else {
                    batch.retarget(i, Op::Write, i as u64 * stride)?;
                    batch.set_inline(i, true)?;
                }
            }
            batch.post_selective(qp, &mut counter, timeout)?;
            ops += batch.len() as u64;
            m.count(ops);
        }
        m.stop();
        counter.drain(qp.send_cq(), timeout)
    }

    /// A transport error once traffic flowed means the peer is gone.
    fn explain(&self, (pair, _): &(Pair, SendBatch), e: Error, measured: bool) -> Error {
        pair.lost(e, measured)
    }

    fn finish(&self, (pair, _): (Pair, SendBatch), _: &ThreadCtx<'_>) -> Result<()> {
        pair.finish()
    }
}
