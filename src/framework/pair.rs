//! Connected pairs, the shape of the paper's RC/UC microbenchmarks: server thread `i` meets
//! client thread `i` through the registry (`server-<i>` ↔ `client-<i>`), one QP and one buffer
//! each. One side posts (a benchmark's own [`Role`]); the other is a passive [`Target`] that
//! leaves when the active side says it is done and, with `--verify`, checks the WRITEs it
//! received.

use std::sync::Arc;

use super::args::{fill_byte, port_index_for, CommonArgs, QueueArgs, Topology};
use super::descriptor::RoleSpec;
use super::endpoint::{idle_until_peers_done, publish_done, Endpoint, EndpointSpec};
use super::lifecycle::{Plan, Role, ThreadCtx};
use super::meter::Meter;
use crate::error::{Error, Result};
use crate::hot::Remote;
use crate::registry::{Entry, PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::{QpType, WcStatus};

/// One connected benchmark, as far as the pair needs to know it.
#[derive(Debug, Clone, Copy)]
pub struct PairSpec<'a> {
    /// The benchmark's name (report lines).
    pub bench: &'static str,
    /// Threads, role and machine of this process.
    pub topo: &'a Topology,
    /// The flags every benchmark has.
    pub common: &'a CommonArgs,
    /// This process's threads post (else they are targets).
    pub active: bool,
    /// RC or UC.
    pub qp_type: QpType,
    /// The operation, for report lines ("WRITE", "READ", or a benchmark's own).
    pub op: &'static str,
    /// Bytes per operation (report lines, `--verify`).
    pub size: u64,
    /// WRs per doorbell (report lines).
    pub postlist: u32,
    /// Send queue depth.
    pub queue_depth: u32,
    /// Inline limit asked of the QP.
    pub max_inline: u32,
    /// Registered buffer per thread.
    pub buf_size: usize,
    /// Make the QP for the `ibv_wr_*` post path.
    pub wr_api: bool,
}

impl<'a> PairSpec<'a> {
    /// An RC pair of `bench` measuring `op`, with the queue flags' depth and inline limit, this
    /// process active unless it runs the client threads (its shape: [`PairSpec::shaped`]).
    pub fn new(
        bench: &'static str,
        op: &'static str,
        topo: &'a Topology,
        queue: &QueueArgs,
        common: &'a CommonArgs,
    ) -> PairSpec<'a> {
        PairSpec {
            bench,
            topo,
            common,
            active: !topo.is_client,
            qp_type: QpType::Rc,
            op,
            size: 0,
            postlist: 1,
            queue_depth: queue.queue_depth,
            max_inline: queue.max_inline,
            buf_size: 4096,
            wr_api: false,
        }
    }

    /// With `postlist` WRs of `size` bytes per doorbell and `buf_size` bytes per thread.
    pub fn shaped(self, size: u64, postlist: u32, buf_size: usize) -> PairSpec<'a> {
        PairSpec {
            size,
            postlist,
            buf_size,
            ..self
        }
    }

    /// The passive side of this pair: idles until its peer is done, checks nothing.
    pub fn target(self) -> Target<'a> {
        Target {
            spec: self,
            check_writes: false,
            written_slots: (0, 0),
        }
    }

    /// The plan of this process's side: its threads count if it is the active side.
    pub fn plan(&self) -> Plan {
        let info = RunInfo {
            bench: self.bench,
            role: self.topo.role_name(),
            op: self.op,
            size: self.size,
            postlist: u64::from(self.postlist),
            first_id: self.topo.first_id(),
            json: self.common.json,
        };
        if self.active {
            Plan::counting(info, self.topo.threads())
        } else {
            Plan::passive(info, self.topo.threads())
        }
    }

    /// Makes thread `ctx.global_id`'s endpoint and connects it to its namesake on the other side.
    pub fn connect(&self, ctx: &ThreadCtx<'_>) -> Result<Pair> {
        let id = ctx.global_id;
        let spec = EndpointSpec {
            qp_type: self.qp_type,
            queue_depth: self.queue_depth,
            recv_depth: 1,
            max_inline: self.max_inline,
            buf_size: self.buf_size,
            fill: fill_byte(self.active, id),
            ex: self.wr_api,
            access: None,
        };
        let port = ctx.open_port(port_index_for(self.common, self.topo.dual_port, id))?;
        let (me, peer) = if self.topo.is_client {
            (format!("client-{id}"), format!("server-{id}"))
        } else {
            (format!("server-{id}"), format!("client-{id}"))
        };
        let pair = Pair::meet(ctx, &port, spec, me, peer)?;
        println!(
            "main: {} {id} connected to {}",
            self.topo.role_name(),
            pair.peer
        );
        Ok(pair)
    }
}

/// One thread's side of a connected pair.
pub struct Pair {
    /// This thread's QP and buffer.
    pub ep: Endpoint,
    /// The registry the pair met through.
    pub reg: Arc<Registry>,
    /// The peer's entry (its QP, its buffer).
    pub remote: Entry,
    /// Our registry name.
    pub me: String,
    /// The peer's registry name.
    pub peer: String,
    /// The report clock checks the peer's liveness while this is held.
    watch: Option<PeerWatch>,
}

impl Pair {
    /// Makes an endpoint on `port` and meets `peer` with it as `me` through the registry; the
    /// report clock watches the peer's liveness until [`Pair::finish`].
    pub fn meet(
        ctx: &ThreadCtx<'_>,
        port: &crate::verbs::Port,
        spec: EndpointSpec,
        me: String,
        peer: String,
    ) -> Result<Pair> {
        let reg = ctx.common.registry()?;
        let placement = ctx.common.placement();
        let (ep, remote) = Endpoint::meet(port, spec, placement, &reg, &me, &peer, ctx.wait())?;
        let watch = Some(reg.watch(&peer, remote.run_id, &peer));
        Ok(Pair {
            ep,
            reg,
            remote,
            me,
            peer,
            watch,
        })
    }

    /// Whether the peer said it is done (one registry round trip).
    pub fn peer_done(&self) -> Result<bool> {
        self.reg
            .is_ready(&format!("{}-done", self.peer), Some(self.remote.run_id))
    }

    /// The peer's buffer, as the target of a batch.
    pub fn remote_buf(&self) -> Remote {
        Remote::of(&self.remote.info)
    }

    /// What an error on this pair's connection means ([`peer_lost`]).
    pub fn lost(&self, e: Error, measured: bool) -> Error {
        peer_lost(e, &self.peer, measured)
    }

    /// The active side's end: says "done" to the passive peer and gives it a moment to see it
    /// before our QP goes away (the peer's liveness is no longer watched: it may leave now).
    pub fn finish(mut self) -> Result<()> {
        self.watch = None;
        announce_done(&self.reg, &self.me)
    }

    /// Checks that every slot (`slots` × `size` bytes, `stride` apart) of our buffer holds
    /// `expect` (what the peer WRITEs, or what our READs fetched).
    pub fn verify_slots(
        &self,
        slots: usize,
        size: u64,
        stride: usize,
        expect: u8,
        what: &str,
    ) -> Result<()> {
        for i in 0..slots {
            let got = self.ep.mr().to_vec(i * stride, size as usize);
            if let Some(pos) = got.iter().position(|&b| b != expect) {
                return Err(Error::Verify(format!(
                    "{what} slot {i} byte {pos} is {:#04x}, expected {expect:#04x}",
                    got[pos]
                )));
            }
        }
        println!("main: verify ok: {slots} {what} slot(s) of {size} bytes hold the peer's data");
        Ok(())
    }
}

/// The roles of a pair whose server threads post to passive client threads (rw-tput-sender's).
pub const SERVER_POSTS: &[RoleSpec] = &[RoleSpec::SERVER, RoleSpec::CLIENT.passive().outliving()];

/// The roles of a pair whose client threads post to passive server threads (rw-tput-receiver's).
pub const CLIENT_POSTS: &[RoleSpec] = &[RoleSpec::SERVER.passive().outliving(), RoleSpec::CLIENT];

/// An error of the transport to `peer` (retries exhausted, a flushed WR, a completion that never
/// came) means the peer is gone: say so, with what was seen. A remote error (access, invalid
/// request, operation) means the same once the connection has carried traffic (`measured`): a
/// killed peer's MRs and QP vanish under our WRs; at the first post it is a real error (e.g. a
/// wrong rkey) and stays one.
pub fn peer_lost(e: Error, peer: &str, measured: bool) -> Error {
    let lost = match e.completion_status() {
        Some(WcStatus::RetryExceeded | WcStatus::RnrRetryExceeded | WcStatus::WrFlush) => true,
        Some(
            WcStatus::RemoteInvalidRequest | WcStatus::RemoteAccess | WcStatus::RemoteOperation,
        ) => measured,
        _ => e.is_timeout(),
    };
    if lost {
        Error::PeerLost {
            peer: peer.to_string(),
            what: e.to_string(),
        }
    } else {
        e
    }
}

/// Says "done" and lingers a moment, so that passive peers see it before our QPs go away.
pub fn announce_done(reg: &Registry, me: &str) -> Result<()> {
    publish_done(reg, me)?;
    // Keep the QP until the peer has seen "done" (it may still verify), then leave.
    std::thread::sleep(std::time::Duration::from_millis(300));
    Ok(())
}

/// The passive side of every connected benchmark: each thread meets its active peer, idles until
/// the peer is done and, with `--verify` after WRITEs, checks that `slots` slots `stride` apart
/// hold the peer's bytes.
pub struct Target<'a> {
    /// The pair's shape.
    pub spec: PairSpec<'a>,
    /// The WRITEs land here: check them with `--verify` (false for READ runs: nothing lands).
    pub check_writes: bool,
    /// Slots the active side WRITEs: (count, stride).
    pub written_slots: (usize, usize),
}

impl Role for Target<'_> {
    type Thread = Pair;

    fn plan(&self) -> Plan {
        self.spec.plan()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Pair> {
        self.spec.connect(ctx)
    }

    fn measure(&self, pair: &mut Pair, m: &mut Meter<'_>) -> Result<()> {
        idle_until_peers_done(&pair.reg, &[(pair.peer.clone(), pair.remote.run_id)], m)
    }

    fn finish(&self, pair: Pair, ctx: &ThreadCtx<'_>) -> Result<()> {
        if !(self.spec.common.verify && self.check_writes) {
            return Ok(());
        }
        let (slots, stride) = self.written_slots;
        let expect = fill_byte(true, ctx.global_id);
        pair.verify_slots(slots, self.spec.size, stride, expect, "WRITE")
            .map_err(|e| {
                Error::Verify(format!(
                    "{} (do both sides run with the same --size and --postlist/--window?)",
                    e.to_string().trim_start_matches("verify: ")
                ))
            })
    }
}
