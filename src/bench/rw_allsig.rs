//! rw-allsig: the WQE-cache-miss test. Each server thread posts a window of WRs one by one (one
//! doorbell each), all to the same remote address, only the last signaled, then polls that one
//! completion. Client threads are passive targets.

use clap::{CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::{
    self, check_inline, counts_at_least_one, fill_byte, flag01, require, Benchmark, CommonArgs,
    Family, Meter, Output, Pair, PairSpec, Plan, Role, Target, ThreadCtx, Topology,
};
use crate::hot::{poll_one, Op, SendBatch, SendSpec};
use crate::verbs::QpType;

/// Local slot of WR `i` of the window: `i × 64`, so READ responses of a window never overlap.
const SLOT: usize = 64;

/// rw-allsig's command line (the original's flags).
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-allsig",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "WQE-cache-miss test (ATC'16 rdma_bench): windows of singly-posted WRs, last one signaled"
)]
pub(crate) struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per READ/WRITE (at most 64: window slots are 64 bytes apart)
    #[arg(long, default_value_t = 8, value_parser = crate::units::count::<u64>)]
    pub size: u64,
    /// WRs per window, posted one by one; the last is signaled
    #[arg(long, default_value_t = 64, value_parser = crate::units::count::<u32>)]
    pub window: u32,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    /// Send queue depth
    #[arg(long, alias = "queue_depth", default_value_t = 128, value_parser = crate::units::count::<u32>)]
    pub queue_depth: u32,
    /// Inline limit requested from the QP
    #[arg(long, alias = "max_inline", default_value_t = 60, value_parser = crate::units::count::<u32>)]
    pub max_inline: u32,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8192, value_parser = crate::units::count::<usize>)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    require((1..=SLOT as u64).contains(&a.size), || {
        format!("size must be between 1 and {SLOT} bytes, not {}", a.size)
    })?;
    counts_at_least_one(&[("--window", a.window as u64)])?;
    require(a.window <= a.queue_depth / 2, || {
        format!(
            "--window ({}) must not exceed --queue-depth / 2 ({})",
            a.window,
            a.queue_depth / 2
        )
    })?;
    require(!(a.use_uc && a.do_read), || {
        "UC cannot do READs (--use-uc 1 needs --do-read 0)".into()
    })?;
    if !a.do_read {
        check_inline(a.size, a.max_inline, "WRITEs")?;
    }
    let need = a.window as usize * SLOT;
    require(need <= a.buf_size, || {
        format!(
            "window × 64 = {need} bytes does not fit the {}-byte buffer",
            a.buf_size
        )
    })
}

fn entry() -> Result<()> {
    let a = Args::parse();
    validate(&a)?;
    let pair = PairSpec {
        bench: BENCH.name,
        topo: &a.topo,
        common: &a.common,
        active: !a.topo.is_client,
        qp_type: if a.use_uc { QpType::Uc } else { QpType::Rc },
        op: if a.do_read { "READ" } else { "WRITE" },
        size: a.size,
        postlist: 1,
        queue_depth: a.queue_depth,
        max_inline: a.max_inline,
        buf_size: a.buf_size,
        wr_api: false,
    };
    if pair.active {
        framework::run(&Windows { a: &a, pair }, &a.common)?;
    } else {
        let target = Target {
            spec: pair,
            check_writes: !a.do_read,
            // Every WRITE of a window lands on the same remote bytes.
            written_slots: (1, 0),
        };
        framework::run(&target, &a.common)?;
    }
    Ok(())
}

/// The active side: windows of singly-posted WRs, the last one signaled.
struct Windows<'a> {
    a: &'a Args,
    pair: PairSpec<'a>,
}

/// A posting thread: its pair and the window's WRs.
struct Window {
    pair: Pair,
    batch: SendBatch,
}

impl Role for Windows<'_> {
    type Thread = Window;

    fn plan(&self) -> Plan {
        self.pair.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Window> {
        let a = self.a;
        let mut pair = self.pair.connect(ctx)?;
        let send = SendSpec {
            op: if a.do_read { Op::Read } else { Op::Write },
            postlist: a.window as usize,
            size: a.size as u32,
            stride: 0, // every WR of the window targets the same remote address…
            local_offset: 0,
            remote_offset: 0,
            inline: !a.do_read,
        };
        let remote = pair.remote_buf();
        let (qp, mr) = pair.ep.parts();
        let mut batch = SendBatch::new(qp, mr, send, Some(remote))?;
        for i in 0..batch.len() {
            // …and reads into its own 64-byte local slot.
            batch.set_local_addr(i, mr.addr() as u64 + (i * SLOT) as u64)?;
            batch.set_signaled(i, i + 1 == batch.len());
        }
        Ok(Window { pair, batch })
    }

    fn measure(&self, w: &mut Window, m: &mut Meter<'_>) -> Result<()> {
        let (batch, qp) = (&mut w.batch, w.pair.ep.qp_mut());
        let timeout = m.poll_timeout();
        let window = u64::from(self.a.window);
        let limit = self.a.common.op_limit();
        let mut ops = 0u64;
        m.start();
        while m.checkpoint() && ops < limit {
            for i in 0..batch.len() {
                batch.post_one(qp, i)?;
            }
            poll_one(qp.send_cq(), timeout)?;
            ops += window;
            m.count(ops);
        }
        Ok(())
    }

    fn explain(&self, w: &Window, e: Error, measured: bool) -> Error {
        w.pair.lost(e, measured)
    }

    fn finish(&self, w: Window, ctx: &ThreadCtx<'_>) -> Result<()> {
        if self.a.common.verify && self.a.do_read {
            let expect = fill_byte(false, ctx.global_id);
            w.pair
                .verify_slots(w.batch.len(), self.a.size, SLOT, expect, "READ")?;
        }
        w.pair.finish()
    }
}

/// rw-allsig.
pub static BENCH: Benchmark = Benchmark {
    name: "rw-allsig",
    family: Family::Microbenchmark,
    roles: crate::framework::SERVER_POSTS,
    reports: "server",
    op: "WRITE",
    output: Output::Rate,
    suite: &["--size 8 --window 32 --do-read 1"],
    command: Args::command,
    entry,
};
