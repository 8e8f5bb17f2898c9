//! The master: creates the request region (SysV segment; every server port registers its own
//! attachment of it), connects one QP per client, and leaves once every client is done.

use std::sync::Arc;

use super::{Kind, WsArgs, MASTER};
use crate::bench::endpoint::{connect_qp, idle_until_peer_done, publish_done};
use crate::bench::runner::{run_threads, Role};
use crate::error::Result;
use crate::mem::ShmBuffer;
use crate::registry::Registry;
use crate::stats::RunInfo;
use crate::verbs::{
    Access, CompletionQueue, MemoryRegion, ProtectionDomain, QpCaps, QpInfo, QpType, QueuePair,
};

pub(super) fn run(kind: Kind, a: &WsArgs, reg: &Arc<Registry>) -> Result<()> {
    let info = RunInfo {
        bench: bench_name(kind),
        role: "Master",
        op: "WRITE",
        size: a.payload(kind) as u64,
        postlist: 1,
        first_id: 0,
        json: a.common.json,
    };
    println!(
        "main: Master with {} server ports, request region {} KiB (SysV key {}), {:.2} % used",
        a.num_server_ports,
        a.rr_size / 1024,
        a.shm_key,
        100.0 * a.layout(kind).check(a.rr_size)? as f64 / a.rr_size as f64
    );
    run_threads(info, Role::Passive, 1, &a.common, |_, _| {
        let mut ports = Vec::new();
        for p in 0..a.num_server_ports {
            let port = a.common.open_port(a.common.port_index + p)?;
            let pd = ProtectionDomain::new(port.context())?;
            let buf = if p == 0 {
                ShmBuffer::create(a.shm_key, a.rr_size, a.common.placement())?
            } else {
                ShmBuffer::attach(a.shm_key, a.rr_size)?
            };
            // Clients only WRITE requests here.
            let mr = MemoryRegion::register(&pd, buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
            if p == 0 {
                mr.fill(0);
            }
            let cq = CompletionQueue::new(port.context(), (2 * a.num_clients as u32).max(16))?;
            ports.push((port, pd, cq, mr));
        }
        // Workers and clients compare their slot layout with ours.
        reg.publish_result(MASTER, &super::layout_fields(kind, a))?;
        // Workers attach the segment once this entry is up.
        reg.announce(
            MASTER,
            &QpInfo {
                buf_size: a.rr_size as u64,
                ..QpInfo::default()
            },
        )?;
        let qp_type = if a.use_uc { QpType::Uc } else { QpType::Rc };
        let mut qps = Vec::with_capacity(a.num_clients);
        let mut runs = Vec::with_capacity(a.num_clients);
        for c in 0..a.num_clients {
            let p = c % a.num_server_ports;
            let (port, pd, cq, mr) = &ports[p];
            let caps = QpCaps {
                max_send_wr: 2,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            };
            let mut qp = QueuePair::new(pd, port, cq, cq, qp_type, caps)?;
            let info = qp.info(Some(mr));
            let me = format!("master-{p}-{c}");
            let remote = connect_qp(
                &mut qp,
                mr,
                &info,
                reg,
                &me,
                &format!("client-conn-{c}"),
                a.common.wait(),
            )?;
            runs.push(remote.run_id);
            qps.push(qp);
        }
        println!("main: Master connected all {} clients", a.num_clients);
        for (c, run) in runs.iter().enumerate() {
            idle_until_peer_done(reg, &format!("client-{c}"), *run)?;
        }
        // Workers watch our entry: leaving on purpose is not dying.
        publish_done(reg, MASTER)
    })?;
    Ok(())
}

/// The binary's name.
pub(super) fn bench_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Sequencer => "ws-sequencer",
        Kind::Echo => "ws-echo",
    }
}
