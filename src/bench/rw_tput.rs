//! rw-tput-sender (outbound READ/WRITE rate) and rw-tput-receiver (inbound rate).
//!
//! Both connect thread `i` of the server process with client thread `i` (`client id = machine-id ×
//! num-threads + t`) over RC or UC. In rw-tput-sender the *server* threads post (the original's
//! naming quirk, kept); in rw-tput-receiver the *client* threads post and the servers are the
//! passive targets. Slot `i` of a postlist uses offset `i · round_up(size, 64)` on both sides.

use clap::{Args, Parser};

use super::common::{
    check_inline, fill_byte, flag01, require, slot_stride, CommonArgs, QueueArgs, Topology,
};
use super::connected::{finish_active, run_connected, verify_slots, Connected};
use super::endpoint::selective_loop;
use crate::error::Result;
#[cfg(has_wr_api)]
use crate::hot::WrBatch;
use crate::hot::{poll_exact, Op, PollTimeout, SendBatch, SendSpec};
use crate::verbs::WorkCompletion;

/// Flags of both rw-tput benchmarks (the original's, same names and meanings).
#[derive(Args, Debug, Clone)]
pub struct RwFlags {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per READ/WRITE
    #[arg(long, default_value_t = 32)]
    pub size: u64,
    /// WRs per doorbell (linked, one ibv_post_send)
    #[arg(long, default_value_t = 1)]
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
    #[arg(long, alias = "max_postlist", default_value_t = 64)]
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
    /// The shared part of a connected run with these flags.
    pub(crate) fn connected<'a>(
        &'a self,
        bench: &'static str,
        common: &'a CommonArgs,
        active: bool,
        buf_size: usize,
    ) -> Connected<'a> {
        Connected {
            bench,
            topo: &self.topo,
            common,
            active,
            use_uc: self.use_uc,
            do_read: self.do_read,
            size: self.size,
            postlist: self.postlist,
            queue_depth: self.queue.queue_depth,
            max_inline: self.queue.max_inline,
            buf_size,
            wr_api: self.post_api == PostApi::Wr,
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
    about = "Outbound READ/WRITE rate (ATC'16 rdma_bench): server threads post, client threads are targets"
)]
pub struct SenderArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub flags: RwFlags,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8192)]
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
    about = "Inbound READ/WRITE rate (ATC'16 rdma_bench): client threads post, server threads are targets"
)]
pub struct ReceiverArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub flags: RwFlags,
    /// Registered buffer per thread, bytes
    #[arg(long, alias = "buf_size", default_value_t = 8 * 1024 * 1024)]
    pub buf_size: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Which side posts.
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

/// Runs rw-tput-sender.
pub fn run_sender(a: SenderArgs) -> Result<()> {
    run(Bench::Sender, &a.flags, a.buf_size, &a.common)
}

/// Runs rw-tput-receiver.
pub fn run_receiver(a: ReceiverArgs) -> Result<()> {
    run(Bench::Receiver, &a.flags, a.buf_size, &a.common)
}

/// The checks that refuse a run before anything is made.
pub fn validate(f: &RwFlags, buf_size: usize, common: &CommonArgs) -> Result<()> {
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
    let stride = slot_stride(f.size);
    let active = f.topo.is_client == bench.client_is_active();
    let c = f.connected(bench.name(), common, active, buf_size);
    run_connected(&c, |pair, global_id, t, counters| {
        let send = f.send_spec();
        let remote = pair.remote_buf();
        let (qp, mr) = pair.ep.parts();
        #[cfg(has_wr_api)]
        if f.post_api == PostApi::Wr {
            let mut wr = WrBatch::new(qp, mr, send, remote)?;
            selective_loop(
                qp,
                &mut wr,
                f.queue.counter(),
                common.op_limit(),
                t,
                counters,
            )?;
        }
        // The classic batch also serves --verify's final all-signaled post on either path.
        let mut batch = SendBatch::new(qp, mr, send, Some(remote))?;
        if f.post_api == PostApi::Classic {
            selective_loop(
                qp,
                &mut batch,
                f.queue.counter(),
                common.op_limit(),
                t,
                counters,
            )?;
        }
        if common.verify {
            // One more batch, all signaled: once it completes, every earlier WR has too (RC order).
            for i in 0..batch.len() {
                batch.set_signaled(i, true);
            }
            batch.post(qp)?;
            let mut wcs = vec![WorkCompletion::default(); batch.len()];
            poll_exact(qp.send_cq(), &mut wcs, PollTimeout::default())?;
            if f.do_read {
                let expect = fill_byte(false, global_id);
                verify_slots(&pair.ep, batch.len(), f.size, stride, expect, "READ")?;
            }
        }
        finish_active(pair)
    })
}
