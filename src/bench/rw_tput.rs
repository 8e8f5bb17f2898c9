//! rw-tput-sender (outbound READ/WRITE rate) and rw-tput-receiver (inbound rate).
//!
//! Both connect thread `i` of the server process with client thread `i` (`client id = machine-id ×
//! num-threads + t`) over RC or UC. In rw-tput-sender the *server* threads post (the original's
//! naming quirk, kept); in rw-tput-receiver the *client* threads post and the servers are the
//! passive targets. Slot `i` of a postlist uses offset `i · round_up(size, 64)` on both sides.

use clap::{Args, CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::{
    self, check_inline, fill_byte, flag01, require, slot_stride, Benchmark, CommonArgs, Family,
    Meter, Output, Pair, PairSpec, Plan, QueueArgs, Role, Target, ThreadCtx, Topology,
    CLIENT_POSTS, SERVER_POSTS,
};
#[cfg(has_wr_api)]
use crate::hot::WrBatch;
use crate::hot::{poll_exact, Op, PollTimeout, SendBatch, SendSpec};
use crate::verbs::{QpType, WorkCompletion};

/// Flags of both rw-tput benchmarks (the original's, same names and meanings).
#[derive(Args, Debug, Clone)]
pub(crate) struct RwFlags {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per READ/WRITE
    #[arg(long, default_value_t = 32, value_parser = crate::units::count::<u64>)]
    pub size: u64,
    /// WRs per doorbell (linked, one ibv_post_send)
    #[arg(long, default_value_t = 1, value_parser = crate::units::count::<u32>)]
    pub postlist: u32,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    /// 1: WRITEs carry their payload inline (the original always does); 0: from the MR
    #[arg(long, default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub inline: bool,
    /// How WRs are posted: classic (linked ibv_send_wr, one ibv_post_send, as the C suite) or wr
    /// (ibv_wr_start … ibv_wr_complete, as perftest does by default)
    #[arg(
        long,
        alias = "post_api",
        default_value = "classic",
        value_name = "classic|wr"
    )]
    pub post_api: PostApi,
    /// Largest postlist accepted (the original's kAppMaxPostlist)
    #[arg(long, alias = "max_postlist", default_value_t = 64, value_parser = crate::units::count::<u32>)]
    pub max_postlist: u32,
}

/// The two ways to post a send postlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PostApi {
    /// Linked `ibv_send_wr`s and one `ibv_post_send`.
    Classic,
    /// `ibv_wr_start`, per-WR `ibv_wr_*` calls, `ibv_wr_complete`.
    Wr,
}

impl RwFlags {
    /// The pair both sides of a run with these flags make.
    pub(crate) fn pair<'a>(
        &'a self,
        bench: &'static str,
        common: &'a CommonArgs,
        active: bool,
        buf_size: usize,
    ) -> PairSpec<'a> {
        PairSpec {
            bench,
            topo: &self.topo,
            common,
            active,
            qp_type: if self.use_uc { QpType::Uc } else { QpType::Rc },
            op: if self.do_read { "READ" } else { "WRITE" },
            size: self.size,
            postlist: self.postlist,
            queue_depth: self.queue.queue_depth,
            max_inline: self.queue.max_inline,
            buf_size,
            wr_api: self.post_api == PostApi::Wr,
        }
    }

    /// The passive side of a run with these flags: WRITEs land in `postlist` slots.
    pub(crate) fn target<'a>(&self, pair: PairSpec<'a>) -> Target<'a> {
        Target {
            spec: pair,
            check_writes: !self.do_read,
            written_slots: (self.postlist as usize, slot_stride(self.size)),
        }
    }

    /// A postlist of READs or inlined WRITEs, slot `i` at `i · round_up(size, 64)` on both sides.
    pub(crate) fn send_spec(&self) -> SendSpec {
        SendSpec {
            op: if self.do_read { Op::Read } else { Op::Write },
            postlist: self.postlist as usize,
            size: self.size as u32,
            stride: slot_stride(self.size),
            local_offset: 0,
            remote_offset: 0,
            inline: self.inlined(),
        }
    }

    /// Whether WRITEs go inline (READs never do).
    pub(crate) fn inlined(&self) -> bool {
        self.inline && !self.do_read
    }
}

/// rw-tput-sender: server threads issue READs/WRITEs to passive client threads.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-tput-sender",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Outbound READ/WRITE rate (ATC'16 rdma_bench): server threads post, client threads are targets"
)]
pub(crate) struct SenderArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub flags: RwFlags,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8192, value_parser = crate::units::count::<usize>)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// rw-tput-receiver: client threads issue READs/WRITEs to passive server threads.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-tput-receiver",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Inbound READ/WRITE rate (ATC'16 rdma_bench): client threads post, server threads are targets"
)]
pub(crate) struct ReceiverArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub flags: RwFlags,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8 * 1024 * 1024, value_parser = crate::units::count::<usize>)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Which of the two benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bench {
    Sender,
    Receiver,
}

impl Bench {
    fn name(self) -> &'static str {
        match self {
            Bench::Sender => "rw-tput-sender",
            Bench::Receiver => "rw-tput-receiver",
        }
    }
    fn client_is_active(self) -> bool {
        self == Bench::Receiver
    }
}

fn sender_main() -> Result<()> {
    let a = SenderArgs::parse();
    run(Bench::Sender, &a.flags, a.buf_size, &a.common)
}

fn receiver_main() -> Result<()> {
    let a = ReceiverArgs::parse();
    run(Bench::Receiver, &a.flags, a.buf_size, &a.common)
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(f: &RwFlags, buf_size: usize, common: &CommonArgs) -> Result<()> {
    common.check()?;
    f.topo.check()?;
    require(f.size >= 1, || "size must be at least 1 byte".into())?;
    require(!(f.use_uc && f.do_read), || {
        "UC cannot do READs (--use-uc 1 needs --do-read 0)".into()
    })?;
    f.queue.check(f.postlist, f.max_postlist)?;
    require(
        crate::build_info::WR_API || f.post_api == PostApi::Classic,
        || crate::build_info::NO_WR_API.into(),
    )?;
    if f.inlined() {
        check_inline(f.size, f.queue.max_inline, "WRITEs")?;
    }
    let need = f.postlist as usize * slot_stride(f.size);
    require(need <= buf_size, || {
        format!("postlist × round_up(size, 64) = {need} bytes does not fit the {buf_size}-byte buffer (--buf-size)")
    })
}

fn run(bench: Bench, f: &RwFlags, buf_size: usize, common: &CommonArgs) -> Result<()> {
    validate(f, buf_size, common)?;
    let active = f.topo.is_client == bench.client_is_active();
    let pair = f.pair(bench.name(), common, active, buf_size);
    if active {
        framework::run(&Poster { f, pair }, common)?;
    } else {
        framework::run(&f.target(pair), common)?;
    }
    Ok(())
}

/// The active side: each thread posts postlists of READs or WRITEs to its peer's buffer.
struct Poster<'a> {
    f: &'a RwFlags,
    pair: PairSpec<'a>,
}

/// A posting thread: its pair and the prebuilt postlist(s).
struct Posting {
    pair: Pair,
    /// The classic postlist; it also makes `--verify`'s final all-signaled post on either path.
    batch: SendBatch,
    #[cfg(has_wr_api)]
    wr: Option<WrBatch>,
}

impl Role for Poster<'_> {
    type Thread = Posting;

    fn plan(&self) -> Plan {
        self.pair.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Posting> {
        let mut pair = self.pair.connect(ctx)?;
        let send = self.f.send_spec();
        let remote = pair.remote_buf();
        let (qp, mr) = pair.ep.parts();
        #[cfg(has_wr_api)]
        let wr = match self.f.post_api {
            PostApi::Wr => Some(WrBatch::new(qp, mr, send, remote)?),
            PostApi::Classic => None,
        };
        let batch = SendBatch::new(qp, mr, send, Some(remote))?;
        Ok(Posting {
            pair,
            batch,
            #[cfg(has_wr_api)]
            wr,
        })
    }

    fn measure(&self, p: &mut Posting, m: &mut Meter<'_>) -> Result<()> {
        let mut counter = self.f.queue.counter();
        let limit = self.pair.common.op_limit();
        let qp = p.pair.ep.qp_mut();
        #[cfg(has_wr_api)]
        let posted = match &mut p.wr {
            Some(wr) => m.pump(qp, wr, &mut counter, limit),
            None => m.pump(qp, &mut p.batch, &mut counter, limit),
        };
        #[cfg(not(has_wr_api))]
        let posted = m.pump(qp, &mut p.batch, &mut counter, limit);
        posted.map(drop)
    }

    fn explain(&self, p: &Posting, e: Error, measured: bool) -> Error {
        p.pair.lost(e, measured)
    }

    fn finish(&self, mut p: Posting, ctx: &ThreadCtx<'_>) -> Result<()> {
        if self.pair.common.verify {
            // One more batch, all signaled: once it completes, every earlier WR has too (RC order).
            let batch = &mut p.batch;
            for i in 0..batch.len() {
                batch.set_signaled(i, true);
            }
            let qp = p.pair.ep.qp_mut();
            let fenced = batch.post(qp).and_then(|()| {
                let mut wcs = vec![WorkCompletion::default(); batch.len()];
                poll_exact(qp.send_cq(), &mut wcs, PollTimeout::new(ctx.attention))
            });
            fenced.map_err(|e| p.pair.lost(e, true))?;
            if self.f.do_read {
                let expect = fill_byte(false, ctx.global_id);
                let stride = slot_stride(self.f.size);
                p.pair
                    .verify_slots(batch.len(), self.f.size, stride, expect, "READ")?;
            }
        }
        p.pair.finish()
    }
}

/// rw-tput-sender.
pub static SENDER: Benchmark = Benchmark {
    name: "rw-tput-sender",
    family: Family::Microbenchmark,
    roles: SERVER_POSTS,
    reports: "server",
    op: "WRITE",
    output: Output::Rate,
    suite: &[
        "--size 32 --postlist 1",
        "--size 32 --postlist 16",
        "--size 32 --postlist 1 --do-read 1",
        "--size 32 --postlist 16 --do-read 1",
    ],
    command: SenderArgs::command,
    entry: sender_main,
};

/// rw-tput-receiver.
pub static RECEIVER: Benchmark = Benchmark {
    name: "rw-tput-receiver",
    family: Family::Microbenchmark,
    roles: CLIENT_POSTS,
    reports: "client",
    op: "WRITE",
    output: Output::Rate,
    suite: &["--size 32 --postlist 16"],
    command: ReceiverArgs::command,
    entry: receiver_main,
};
