//! What the connected (RC/UC, one QP per thread pair) benchmarks share: server thread `i` meets
//! client thread `i` through the registry; one side posts, the other is a passive target that
//! leaves when the active side says it is done and, with `--verify`, checks the WRITEs it received.

use super::common::{fill_byte, port_index_for, CommonArgs, Topology};
use super::endpoint::{idle_until_peer_done, publish_done, Endpoint, EndpointSpec};
use super::runner::{run_threads, Role};
use crate::error::{Error, Result};
use crate::hot::Remote;
use std::sync::Arc;

use crate::registry::{PeerWatch, Registry};
use crate::stats::{Counters, RunInfo};
use crate::verbs::QpType;

/// One connected benchmark run, as far as the shared part needs to know it.
pub(crate) struct Connected<'a> {
    pub bench: &'static str,
    pub topo: &'a Topology,
    pub common: &'a CommonArgs,
    /// Whether this process's threads post (else they are targets).
    pub active: bool,
    pub use_uc: bool,
    pub do_read: bool,
    pub size: u64,
    pub postlist: u32,
    pub queue_depth: u32,
    pub max_inline: u32,
    pub buf_size: usize,
    /// Create QPs for the `ibv_wr_*` post path.
    pub wr_api: bool,
    /// Slots (count, stride) the passive side checks after WRITEs with --verify.
    pub written_slots: (usize, usize),
}

/// Runs the threads: connect each pair, then `active_body(pair, global_id, t, counters)` on the
/// active side, or wait-and-verify on the passive side.
pub(crate) fn run_connected<F>(c: &Connected<'_>, active_body: F) -> Result<()>
where
    F: Fn(&mut Pair, usize, usize, &Counters) -> Result<()> + Sync,
{
    let first_id = c.topo.first_id();
    let info = RunInfo {
        bench: c.bench,
        role: c.topo.role_name(),
        op: if c.do_read { "READ" } else { "WRITE" },
        size: c.size,
        postlist: u64::from(c.postlist),
        first_id,
        json: c.common.json,
    };
    println!("main: Using {} threads", c.topo.threads());
    let role = if c.active {
        Role::Counting
    } else {
        Role::Passive
    };
    run_threads(info, role, c.topo.threads(), c.common, |t, counters| {
        let global_id = first_id + t;
        let mut pair = connect_pair(c, global_id)?;
        if c.active {
            let peer = pair.peer.clone();
            return active_body(&mut pair, global_id, t, counters)
                .map_err(|e| transport_loss(e, &peer, counters.get(t) > 0));
        }
        idle_until_peer_done(&pair.reg, &pair.peer, pair.remote.run_id)?;
        if c.common.verify && !c.do_read {
            let (slots, stride) = c.written_slots;
            let expect = fill_byte(true, global_id);
            verify_slots(&pair.ep, slots, c.size, stride, expect, "WRITE").map_err(|e| {
                Error::Verify(format!(
                    "{} (do both sides run with the same --size and --postlist/--window?)",
                    e.to_string().trim_start_matches("verify: ")
                ))
            })?;
        }
        Ok(())
    })?;
    Ok(())
}

/// A connected RC/UC pair endpoint: this thread's side and what it knows of the peer.
pub(crate) struct Pair {
    pub ep: Endpoint,
    pub reg: Arc<Registry>,
    pub remote: crate::registry::Entry,
    pub me: String,
    pub peer: String,
    /// The report clock checks the peer's liveness while this is held.
    pub watch: Option<PeerWatch>,
}

/// An error of the transport to `peer` (retries exhausted, a flushed WR, a completion that never
/// came) means the peer is gone: say so, with what was seen. A remote error (access, invalid
/// request, operation) means the same once the connection has carried traffic (`measured`): a
/// killed peer's MRs and QP vanish under our WRs; at the first post it is a real error (e.g. a
/// wrong rkey) and stays one.
pub(crate) fn transport_loss(e: Error, peer: &str, measured: bool) -> Error {
    const REM_INV_REQ: u32 = 9;
    const REM_ACCESS: u32 = 10;
    const REM_OP: u32 = 11;
    const RETRY_EXC: u32 = 12;
    const RNR_RETRY_EXC: u32 = 13;
    const WR_FLUSH: u32 = 5;
    let lost = match e.completion_status() {
        Some(RETRY_EXC | RNR_RETRY_EXC | WR_FLUSH) => true,
        Some(REM_INV_REQ | REM_ACCESS | REM_OP) => measured,
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

/// Makes thread `global_id`'s endpoint and connects it to its namesake on the other side
/// (`server-<id>` ↔ `client-<id>`).
pub(crate) fn connect_pair(s: &Connected<'_>, global_id: usize) -> Result<Pair> {
    let common = s.common;
    let spec = EndpointSpec {
        qp_type: if s.use_uc { QpType::Uc } else { QpType::Rc },
        queue_depth: s.queue_depth,
        recv_depth: 1,
        max_inline: s.max_inline,
        buf_size: s.buf_size,
        fill: fill_byte(s.active, global_id),
        ex: s.wr_api,
        access: None,
    };
    let port = common.open_port(port_index_for(common, s.topo.dual_port, global_id))?;
    let reg = common.registry()?;
    let (me, peer) = if s.topo.is_client {
        (format!("client-{global_id}"), format!("server-{global_id}"))
    } else {
        (format!("server-{global_id}"), format!("client-{global_id}"))
    };
    let (ep, remote) = Endpoint::meet(
        &port,
        spec,
        common.placement(),
        &reg,
        &me,
        &peer,
        common.wait(),
    )?;
    println!(
        "main: {} {global_id} connected to {peer}",
        s.topo.role_name()
    );
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

impl Pair {
    /// The peer's buffer, as the target of a batch.
    pub fn remote_buf(&self) -> Remote {
        Remote::of(&self.remote.info)
    }
}

/// Says "done" to the passive peer and gives it a moment to see it before our QP goes away (the
/// peer's liveness is no longer watched: it may leave now).
pub(crate) fn finish_active(pair: &mut Pair) -> Result<()> {
    pair.watch = None;
    announce_done(&pair.reg, &pair.me)
}

/// Says "done" and lingers a moment, so that passive peers see it before our QPs go away.
pub(crate) fn announce_done(reg: &Registry, me: &str) -> Result<()> {
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
        let got = ep.mr().to_vec(i * stride, size as usize);
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
