//! rw-tput-sender (outbound READ/WRITE rate) and rw-tput-receiver (inbound rate).
//!
//! Both connect thread `i` of the server process with client thread `i` (`client gid = machine-id ×
//! num-threads + t`) over RC or UC. In rw-tput-sender the *server* threads post (the original's
//! naming quirk, kept); in rw-tput-receiver the *client* threads post and the servers are the
//! passive targets. Slot `i` of a postlist uses offset `i · round_up(size, 64)` on both sides.

use clap::{Args, Parser};

use super::common::{
    check_inline, fill_byte, flag01, port_index_for, require, slot_stride, CommonArgs,
};
use super::endpoint::{
    connect_through, drain_signaled, idle_until_peer_done, publish_done, Endpoint, EndpointSpec,
};
use super::runner::{run_threads, Role};
use crate::error::{Error, Result};
use crate::hot::{
    check_batching, poll_exact, stop_requested, Op, PollTimeout, Remote, SendBatch, SendSpec,
    UnsignaledCounter,
};
use crate::registry::Registry;
use crate::stats::{Counters, RunInfo};
use crate::verbs::{QpType, WorkCompletion};

/// Flags of both rw-tput benchmarks (the original's, same names and meanings).
#[derive(Args, Debug, Clone)]
pub struct RwFlags {
    /// Threads in this process (one QP each)
    #[arg(long, alias = "num_threads", default_value_t = 1)]
    pub num_threads: usize,
    /// 1: alternate threads between two ports
    #[arg(long, alias = "dual_port", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub dual_port: bool,
    /// 1: unreliable connected transport (WRITEs only)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// 1: this process runs the client threads
    #[arg(long, alias = "is_client", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub is_client: bool,
    /// Client machine index (client global ids are machine-id × num-threads + t)
    #[arg(long, alias = "machine_id", default_value_t = 0)]
    pub machine_id: usize,
    /// Bytes per READ/WRITE
    #[arg(long, default_value_t = 32)]
    pub size: u64,
    /// WRs per doorbell (linked, one ibv_post_send)
    #[arg(long, default_value_t = 1)]
    pub postlist: u32,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    /// One signaled WR every N (selective signaling)
    #[arg(long, alias = "unsig_batch", default_value_t = 64)]
    pub unsig_batch: u32,
    /// Send queue depth (libhrd's kHrdSQDepth)
    #[arg(long, alias = "queue_depth", default_value_t = 128)]
    pub queue_depth: u32,
    /// Inline limit requested from the QP (libhrd's kHrdMaxInline)
    #[arg(long, alias = "max_inline", default_value_t = 60)]
    pub max_inline: u32,
    /// Largest postlist accepted (the original's kAppMaxPostlist)
    #[arg(long, alias = "max_postlist", default_value_t = 64)]
    pub max_postlist: u32,
}

/// rw-tput-sender: server threads issue READs/WRITEs to passive client threads.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rw-tput-sender",
    version,
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
    require(f.num_threads >= 1, || {
        "num-threads must be at least 1".into()
    })?;
    require(f.size >= 1, || "size must be at least 1 byte".into())?;
    require(!(f.use_uc && f.do_read), || {
        "UC cannot do READs (--use-uc 1 needs --do-read 0)".into()
    })?;
    check_batching(f.postlist, f.unsig_batch, f.queue_depth, f.max_postlist)
        .map_err(Error::Config)?;
    if !f.do_read {
        check_inline(f.size, f.max_inline, "WRITEs")?;
    }
    let need = f.postlist as usize * slot_stride(f.size);
    require(need <= buf_size, || {
        format!("postlist × round_up(size, 64) = {need} bytes does not fit the {buf_size}-byte buffer (--buf-size)")
    })
}

fn run(bench: Bench, f: &RwFlags, buf_size: usize, common: &CommonArgs) -> Result<()> {
    validate(f, buf_size, common)?;
    let active = f.is_client == bench.client_is_active();
    let role_name = if f.is_client { "Client" } else { "Server" };
    let info = RunInfo {
        bench: bench.name(),
        role: role_name,
        op: if f.do_read { "READ" } else { "WRITE" },
        size: f.size,
        postlist: u64::from(f.postlist),
        first_id: if f.is_client {
            f.machine_id * f.num_threads
        } else {
            0
        },
        json: common.json,
    };
    let first_id = info.first_id;
    println!("main: Using {} threads", f.num_threads);
    let role = if active {
        Role::Counting
    } else {
        Role::Passive
    };
    run_threads(info, role, f.num_threads, common, |t, counters| {
        let gid = first_id + t;
        thread(f, buf_size, common, active, gid, t, counters)
    })?;
    Ok(())
}

/// A connected RC/UC pair endpoint: this thread's side and what it knows of the peer.
pub(crate) struct Pair {
    pub ep: Endpoint,
    pub reg: Registry,
    pub remote: crate::registry::Entry,
    pub me: String,
    pub peer: String,
}

/// How one thread of a connected benchmark is set up.
pub(crate) struct PairSpec {
    pub is_client: bool,
    pub active: bool,
    pub use_uc: bool,
    pub dual_port: bool,
    pub queue_depth: u32,
    pub max_inline: u32,
    pub buf_size: usize,
}

/// Makes thread `gid`'s endpoint and connects it to its namesake on the other side
/// (`server-<gid>` ↔ `client-<gid>`).
pub(crate) fn connect_pair(common: &CommonArgs, s: &PairSpec, gid: usize) -> Result<Pair> {
    let spec = EndpointSpec {
        qp_type: if s.use_uc { QpType::Uc } else { QpType::Rc },
        queue_depth: s.queue_depth,
        recv_depth: 1,
        max_inline: s.max_inline,
        buf_size: s.buf_size,
        fill: fill_byte(s.active, gid),
    };
    let ep = Endpoint::new(common, port_index_for(common, s.dual_port, gid), spec)?;
    let reg = Registry::connect(common.registry.as_deref())?;
    let (me, peer) = if s.is_client {
        (format!("client-{gid}"), format!("server-{gid}"))
    } else {
        (format!("server-{gid}"), format!("client-{gid}"))
    };
    let remote = connect_through(&reg, &ep.qp, Some(&ep.mr), &me, &peer, common)?;
    println!(
        "main: {} {gid} connected to {peer}",
        if s.is_client { "Client" } else { "Server" }
    );
    Ok(Pair {
        ep,
        reg,
        remote,
        me,
        peer,
    })
}

/// The passive side: wait for the active peer to finish, then (with --verify) check its WRITEs.
pub(crate) fn passive(
    p: &Pair,
    common: &CommonArgs,
    check_writes: Option<(usize, u64, usize)>,
    gid: usize,
) -> Result<()> {
    idle_until_peer_done(&p.reg, &p.peer, p.remote.run_id)?;
    if let (true, Some((slots, size, stride))) = (common.verify, check_writes) {
        verify_slots(&p.ep, slots, size, stride, fill_byte(true, gid), "WRITE")?;
    }
    Ok(())
}

fn thread(
    f: &RwFlags,
    buf_size: usize,
    common: &CommonArgs,
    active: bool,
    gid: usize,
    t: usize,
    counters: &Counters,
) -> Result<()> {
    let spec = PairSpec {
        is_client: f.is_client,
        active,
        use_uc: f.use_uc,
        dual_port: f.dual_port,
        queue_depth: f.queue_depth,
        max_inline: f.max_inline,
        buf_size,
    };
    let pair = connect_pair(common, &spec, gid)?;
    let stride = slot_stride(f.size);
    if !active {
        let writes = (!f.do_read).then_some((f.postlist as usize, f.size, stride));
        return passive(&pair, common, writes, gid);
    }
    let Pair {
        ep,
        reg,
        remote,
        me,
        ..
    } = &pair;
    let r = Remote {
        addr: remote.info.buf_addr,
        rkey: remote.info.rkey,
        len: remote.info.buf_size,
    };
    let send = SendSpec {
        op: if f.do_read { Op::Read } else { Op::Write },
        postlist: f.postlist as usize,
        size: f.size as u32,
        stride,
        local_offset: 0,
        remote_offset: 0,
        inline: !f.do_read,
    };
    let mut batch = SendBatch::new(&ep.qp, &ep.mr, send, Some(r))?;
    let mut counter = UnsignaledCounter::new(f.unsig_batch);
    let timeout = PollTimeout::default();
    let postlist = u64::from(f.postlist);
    let mut ops = 0u64;
    counters.start(t);
    while !stop_requested() {
        batch.post_selective(&mut counter, timeout)?;
        ops += postlist;
        counters.set(t, ops);
    }
    counters.stop(t);
    drain_signaled(ep, counter.posted())?;
    if common.verify {
        // One more batch, all signaled: once it completes, every earlier WR has too (RC order).
        for i in 0..batch.len() {
            batch.set_signaled(i, true);
        }
        batch.post()?;
        let mut wcs = vec![WorkCompletion::default(); batch.len()];
        poll_exact(ep.qp.send_cq(), &mut wcs, timeout)?;
        if f.do_read {
            verify_slots(
                ep,
                batch.len(),
                f.size,
                stride,
                fill_byte(false, gid),
                "READ",
            )?;
        }
    }
    finish_active(reg, me)
}

/// Says "done" to the passive peer and gives it a moment to see it before our QP goes away.
pub(crate) fn finish_active(reg: &Registry, me: &str) -> Result<()> {
    publish_done(reg, me)?;
    // Keep the QP until the peer has seen "done" (it may still verify), then leave.
    std::thread::sleep(std::time::Duration::from_millis(300));
    Ok(())
}

/// Checks that every slot (`slots` × `size` bytes, `stride` apart) holds `expect`.
pub(crate) fn verify_slots(
    ep: &Endpoint,
    slots: usize,
    size: u64,
    stride: usize,
    expect: u8,
    what: &str,
) -> Result<()> {
    for i in 0..slots {
        // SAFETY: the peer is done (WRITE) or our last READs completed: nothing writes here now.
        let got = unsafe { ep.bytes(i * stride, size as usize) };
        if let Some(pos) = got.iter().position(|&b| b != expect) {
            return Err(Error::config(format!(
                "verify: {what} slot {i} byte {pos} is {:#04x}, expected {expect:#04x}",
                got[pos]
            )));
        }
    }
    println!("main: verify ok: {slots} {what} slot(s) of {size} bytes hold the peer's data");
    Ok(())
}
