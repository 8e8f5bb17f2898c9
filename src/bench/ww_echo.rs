//! ww-echo: WRITE request, WRITE reply. Client thread `i` and server thread `i` are connected
//! (RC, or UC with `--use-uc 1`). In each round the client WRITEs `window` requests (inlined,
//! one doorbell) into the server's buffer, slot `j` at `j·round_up(size, 64)`; the server waits
//! until all `window` arrived, and WRITEs each payload back into the same slot at the client;
//! the client waits for all `window` replies, then starts the next round.
//!
//! Every request carries its tag (client id and sequence number) in each 8-byte word; a side
//! waits for slot `j` until all its bytes are the ones it expects there (its tail first), so no
//! round is mistaken for an earlier one, and a slot that ends with its tag but never completes
//! fails the run; `--verify 1` adds the client's "verify ok" line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::echo_payload;
use crate::framework::{
    self, counts_at_least_one, flag01, port_index_for, publish_done, require, slot_stride,
    Benchmark, CommonArgs, Endpoint, EndpointSpec, Family, Meter, Output, Plan, QueueArgs, Role,
    RoleSpec, ThreadCtx, Topology,
};
use crate::hot::{poll_one, Op, Remote, SendBatch, SendSpec};
use crate::registry::{PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::QpType;

/// ww-echo's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ww-echo",
    mut_arg("verify", |a| a.help("Check that every reply carries one of the client's outstanding requests back, byte for byte, each once")),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "The paper's WRITE-request/WRITE-reply echo (ATC'16 rdma_bench): windows of inlined \
WRITEs each way between connected thread pairs"
)]
pub(crate) struct Args {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub topo: Topology,
    /// 1: UC, 0: RC
    #[arg(long, alias = "use_uc", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per request and reply (inlined; at least 8, the tag)
    #[arg(long, default_value_t = 28, value_parser = crate::units::count::<u32>)]
    pub size: u32,
    /// WRITEs per round each way (both sides must agree)
    #[arg(long, default_value_t = 64, value_parser = crate::units::count::<u32>)]
    pub window: u32,
    /// Largest window accepted (MAX_WINDOW_SIZE)
    #[arg(long, alias = "max_window", default_value_t = 128, value_parser = crate::units::count::<u32>)]
    pub max_window: u32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub queue: QueueArgs,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &Args) -> Result<()> {
    a.common.check()?;
    a.topo.check()?;
    counts_at_least_one(&[("--window", a.window as u64)])?;
    require(a.window <= a.max_window, || {
        format!(
            "window ({}) must be between 1 and {}",
            a.window, a.max_window
        )
    })?;
    require(a.window <= a.queue.queue_depth, || {
        format!(
            "--window ({}) exceeds --queue-depth ({}): a round posts the whole window at once",
            a.window, a.queue.queue_depth
        )
    })?;
    require(a.size >= 8, || {
        format!(
            "size {} is below 8 bytes (each WRITE carries an 8-byte tag)",
            a.size
        )
    })?;
    crate::framework::check_inline(u64::from(a.size), a.queue.max_inline, "WRITEs")
}

fn entry() -> Result<()> {
    let a = Args::parse();
    validate(&a)?;
    let reg = a.common.registry()?;
    framework::run(&Echoes { a: &a, reg }, &a.common)?;
    Ok(())
}

/// Both sides: each thread is one end of a connected pair, client or server as the flags say.
struct Echoes<'a> {
    a: &'a Args,
    reg: Arc<Registry>,
}

/// One end of a pair: its QP, the prebuilt window of WRITEs, and what it knows of the peer.
struct End {
    id: usize,
    me: String,
    peer: String,
    ep: Endpoint,
    batch: SendBatch,
    peer_done: PeerDone,
    /// A peer killed mid-round never sends its done marker: the report clock notices its entry
    /// expire and ends the waits of the measure step instead of letting them spin.
    _watch: PeerWatch,
    ops: u64,
}

impl Role for Echoes<'_> {
    type Thread = End;

    fn plan(&self) -> Plan {
        let a = self.a;
        let info = RunInfo {
            bench: BENCH.name,
            role: a.topo.role_name(),
            op: "WRITE",
            size: u64::from(a.size),
            postlist: u64::from(a.window),
            first_id: a.topo.first_id(),
            json: a.common.json,
        };
        Plan::counting(info, a.topo.threads())
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<End> {
        let (a, reg, id) = (self.a, &self.reg, ctx.global_id);
        let port = ctx.open_port(port_index_for(&a.common, a.topo.dual_port, id))?;
        let w = a.window as usize;
        let slot = slot_stride(u64::from(a.size));
        let spec = EndpointSpec {
            qp_type: if a.use_uc { QpType::Uc } else { QpType::Rc },
            queue_depth: a.queue.queue_depth,
            recv_depth: 1,
            max_inline: a.queue.max_inline,
            // Slots the peer WRITEs into, then the slots our WRITEs are inlined from.
            buf_size: 2 * w * slot,
            fill: 0,
            ex: false,
            access: None,
        };
        let (me, peer) = if a.topo.is_client {
            (format!("client-{id}"), format!("server-{id}"))
        } else {
            (format!("server-{id}"), format!("client-{id}"))
        };
        let placement = a.common.placement();
        let (mut ep, remote) = Endpoint::meet(&port, spec, placement, reg, &me, &peer, ctx.wait())?;
        let watch = reg.watch(&peer, remote.run_id, &peer);
        let (qp, mr) = ep.parts();
        let send = SendSpec {
            op: Op::Write,
            postlist: w,
            size: a.size,
            stride: slot,
            local_offset: w * slot,
            remote_offset: 0,
            inline: true,
        };
        let mut batch = SendBatch::new(qp, mr, send, Some(Remote::of(&remote.info)))?;
        // The round's last WRITE is signaled and reaped before the next round: RC and UC
        // complete in order, so its CQE retires the whole window and at most `window` WRs are
        // ever queued.
        batch.set_signaled(w - 1, true);
        Ok(End {
            id,
            me,
            peer_done: PeerDone::new(&peer, remote.run_id),
            peer,
            ep,
            batch,
            _watch: watch,
            ops: 0,
        })
    }

    fn measure(&self, e: &mut End, m: &mut Meter<'_>) -> Result<()> {
        let (a, reg) = (self.a, &self.reg);
        let client = a.topo.is_client;
        let id = e.id;
        let (qp, mr) = e.ep.parts();
        let batch = &mut e.batch;
        let w = a.window as usize;
        let slot = slot_stride(u64::from(a.size));
        let timeout = m.poll_timeout();
        let size = a.size as usize;
        // A side waits on a slot's last 8 bytes (the WRITE's last bytes, whatever the size):
        // what `fill` put there for the tag it expects.
        let tail = size - 8;
        let tail_of = |tag: u64| {
            let t = tag.to_le_bytes();
            u64::from_le_bytes(std::array::from_fn(|k| t[(tail + k) % 8]))
        };
        let mut last8 = [0u8; 8];
        let mut body = vec![0u8; size];
        let mut want_body = vec![0u8; size];
        let mut round = 0u64;
        let tag_of = |round: u64, j: usize| echo_payload::tag(id, round * w as u64 + j as u64 + 1);
        if client {
            m.start();
        }
        'rounds: while m.checkpoint() && e.ops < a.common.op_limit() {
            if client {
                for j in 0..w {
                    echo_payload::fill(&mut body, tag_of(round, j));
                    mr.write(w * slot + j * slot, &body);
                }
                batch.post(qp)?;
                poll_one(qp.send_cq(), timeout)?;
            }
            // The peer's window (requests at the server, replies at the client): a slot is in
            // once its last 8 bytes hold what we expect there, then once all its bytes do (a
            // WRITE's bytes land in no guaranteed order: Soft-RoCE copies them with memcpy).
            for j in 0..w {
                let tag = tag_of(round, j);
                let want = tail_of(tag);
                let mut spins = 0u32;
                while {
                    mr.read(j * slot + tail, &mut last8);
                    u64::from_le_bytes(last8) != want
                } {
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(4096) {
                        if !m.checkpoint() {
                            break 'rounds;
                        }
                        if e.peer_done.check(reg)? {
                            if client {
                                return Err(Error::PeerLost {
                                    peer: e.peer.clone(),
                                    what: "it finished while replies to this round were \
                                           outstanding"
                                        .into(),
                                });
                            }
                            // The client finished after its last round: so do we.
                            return Ok(());
                        }
                    }
                }
                echo_payload::fill(&mut want_body, tag);
                let deadline = Instant::now() + Duration::from_secs(1);
                loop {
                    mr.read(j * slot, &mut body);
                    if body == want_body {
                        // The server echoes the request as it found it: into the slot its reply
                        // is inlined from.
                        if !client {
                            mr.write(w * slot + j * slot, &body);
                        }
                        break;
                    }
                    if Instant::now() >= deadline {
                        let what = if client { "reply" } else { "request" };
                        return Err(Error::Verify(format!(
                            "the {what} in slot {j} ended with its tag but its bytes are not \
                             {tag:#x}'s (bytes {:02x?})",
                            &body[..body.len().min(16)]
                        )));
                    }
                }
            }
            // The slots' other bytes are read after their tails were seen.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            if !client {
                if e.ops == 0 {
                    m.start();
                }
                batch.post(qp)?;
                match poll_one(qp.send_cq(), timeout) {
                    Ok(_) => {}
                    // The client leaves only once it has read every reply of its last round:
                    // a reply's completion missing after its done is the reply's ACK, lost
                    // with the client's QP (Soft-RoCE drops packets under load), not a reply.
                    Err(_) if e.peer_done.check(reg)? => return Ok(()),
                    Err(err) => return Err(err),
                }
            }
            round += 1;
            e.ops += w as u64;
            m.count(e.ops);
        }
        Ok(())
    }

    fn finish(&self, e: End, _: &ThreadCtx<'_>) -> Result<()> {
        let a = self.a;
        if a.topo.is_client && a.common.verify && e.ops > 0 {
            println!(
                "main: Client {}: verify ok: {} replies, each its request's payload",
                e.id, e.ops
            );
        }
        publish_done(&self.reg, &e.me)
    }
}

/// ww-echo.
pub static BENCH: Benchmark = Benchmark {
    name: "ww-echo",
    family: Family::Application,
    roles: &[RoleSpec::SERVER.outliving(), RoleSpec::CLIENT],
    reports: "server",
    op: "WRITE",
    output: Output::Rate,
    suite: &["--window 16 --size 28"],
    command: Args::command,
    entry,
};

/// Whether the peer marked itself done (looked up at most every 500 ms).
struct PeerDone {
    name: String,
    run: u64,
    next: Instant,
}

impl PeerDone {
    fn new(peer: &str, run: u64) -> Self {
        PeerDone {
            name: format!("{peer}-done"),
            run,
            next: Instant::now() + Duration::from_millis(500),
        }
    }
    fn check(&mut self, reg: &Registry) -> Result<bool> {
        let now = Instant::now();
        if now < self.next {
            return Ok(false);
        }
        self.next = now + Duration::from_millis(500);
        reg.is_ready(&self.name, Some(self.run))
    }
}
