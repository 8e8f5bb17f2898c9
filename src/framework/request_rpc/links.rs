//! A worker's and a client's connections: the UD reply QPs and the clients' addresses, the
//! client's QP to the master's region.

use std::sync::Arc;

use super::{check_layout, RpcArgs, RpcShape, MASTER};
use crate::error::Result;
use crate::framework::ud_rpc::{ClientSet, UdRpc, UdRpcSpec};
use crate::framework::{Endpoint, EndpointSpec, RollCall, ThreadCtx};
use crate::hot::{DestId, RequestRegion};
use crate::registry::{Entry, PeerWatch, Registry};
use crate::verbs::{Access, QpType};

/// A worker's side of the RPC: the request region, UD reply QPs on every server port, and an
/// address for every client (on the port that serves it).
pub struct WorkerLink {
    /// The master's region, attached.
    pub region: RequestRegion,
    /// Reply QPs of server port p at index p.
    pub rpcs: Vec<UdRpc>,
    /// Client c's destination and QPN, on port c mod num-server-ports.
    pub dests: Vec<(DestId, u32)>,
    /// The clients, to tell when they have all left.
    pub clients: ClientSet,
    /// Watches the master (its loss ends the run): keep it for the whole run.
    pub watch: PeerWatch,
}

/// Connects worker `ctx.t`: waits for the master (and checks its layout), attaches the region,
/// makes reply QPs carrying up to `reply_payload` bytes, announces itself and finds every
/// client's UD QP.
pub fn connect_worker(
    shape: RpcShape<'_>,
    a: &RpcArgs,
    reg: &Arc<Registry>,
    ctx: &ThreadCtx<'_>,
    reply_payload: usize,
) -> Result<WorkerLink> {
    let w = ctx.t;
    let master = reg.find_ready(MASTER, ctx.wait())?;
    let watch = reg.watch(MASTER, master.run_id, MASTER);
    check_layout(reg, shape.fields, master.run_id)?;
    let region = RequestRegion::attach(a.shm_key, a.rr_size)?;
    let mut rpcs = Vec::with_capacity(a.num_server_ports);
    for p in 0..a.num_server_ports {
        let port = ctx.open_port(a.common.port_index + p)?;
        let spec = UdRpcSpec {
            qps: a.num_ud_qps,
            queue_depth: a.queue.queue_depth,
            recv_slots: 1,
            recv_payload: 0,
            max_postlist: a.postlist as usize,
            send_payload: reply_payload,
            max_inline: a.queue.max_inline,
        };
        rpcs.push(UdRpc::new(ctx, &port, spec, &a.queue)?);
    }
    reg.announce(&format!("worker-{w}"), &rpcs[0].info())?;
    let mut dests = Vec::with_capacity(a.num_clients);
    let mut runs = Vec::with_capacity(a.num_clients);
    let mut roll = RollCall::new("client", "--num-clients", a.num_clients);
    for c in 0..a.num_clients {
        let e = reg
            .find_ready(&format!("client-dgram-{c}"), ctx.wait())
            .map_err(|e| roll.missing(e))?;
        roll.came();
        let dest = rpcs[c % a.num_server_ports].dest_to(&e.info)?;
        dests.push((dest, e.info.qpn));
        runs.push(e.run_id);
    }
    let clients = ClientSet::known(
        (0..a.num_clients).map(|c| format!("client-{c}")).collect(),
        runs,
    );
    Ok(WorkerLink {
        region,
        rpcs,
        dests,
        clients,
        watch,
    })
}

/// A client's side of the RPC: its QP to the master's region and its UD QP for the replies.
pub struct ClientLink {
    /// The connected QP (and the buffer its inlined WRITEs are built in).
    pub ep: Endpoint,
    /// The master's entry: the region's address and key.
    pub master: Entry,
    /// The reply QP, its receive ring filled.
    pub rpc: UdRpc,
    /// Worker 0's entry (its run id names the workers' run).
    pub workers: Entry,
    /// Watches the workers (their loss ends the run): keep it for the whole run.
    pub watch: PeerWatch,
}

/// Connects client `ctx.global_id`: meets the master on server port `id mod num-server-ports`
/// (and checks its layout), fills `window` receive slots of `reply_payload` bytes, announces its
/// UD QP and waits for the workers.
pub fn connect_client(
    shape: RpcShape<'_>,
    a: &RpcArgs,
    reg: &Arc<Registry>,
    ctx: &ThreadCtx<'_>,
    reply_payload: usize,
) -> Result<ClientLink> {
    let id = ctx.global_id;
    let port = ctx.open_port(a.common.port_index + id % a.num_client_ports)?;
    let spec = EndpointSpec {
        qp_type: if a.use_uc { QpType::Uc } else { QpType::Rc },
        queue_depth: a.queue.queue_depth,
        recv_depth: 1,
        max_inline: a.queue.max_inline,
        buf_size: 4096,
        fill: 0,
        ex: false,
        access: Some(Access::LOCAL_WRITE),
    };
    let (ep, master) = Endpoint::meet(
        &port,
        spec,
        a.common.placement(),
        reg,
        &format!("client-conn-{id}"),
        &format!("master-{}-{id}", id % a.num_server_ports),
        ctx.wait(),
    )?;
    check_layout(reg, shape.fields, master.run_id)?;
    let rspec = UdRpcSpec {
        qps: 1,
        queue_depth: a.queue.queue_depth,
        recv_slots: a.window,
        recv_payload: reply_payload,
        max_postlist: 1,
        send_payload: 0,
        max_inline: a.queue.max_inline,
    };
    let mut rpc = UdRpc::new(ctx, &port, rspec, &a.queue)?;
    rpc.fill()?;
    reg.announce(&format!("client-dgram-{id}"), &rpc.info())?;
    let workers = reg.find_ready("worker-0", ctx.wait())?;
    let watch = reg.watch("worker-0", workers.run_id, "worker-0");
    Ok(ClientLink {
        ep,
        master,
        rpc,
        workers,
        watch,
    })
}
