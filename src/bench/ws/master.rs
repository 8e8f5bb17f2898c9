//! The master: creates the request region (SysV segment; every server port registers its own
//! attachment of it), connects one QP per client, and leaves once every client is done.

use std::sync::Arc;

use super::{Kind, WsArgs, MASTER};
use crate::bench::endpoint::{idle_until_peer_done, publish_done};
use crate::bench::region_ports;
use crate::bench::runner::{run_threads, Role};
use crate::error::Result;
use crate::registry::Registry;
use crate::stats::RunInfo;
use crate::verbs::{Access, QpInfo, QpType};

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
        // Clients only WRITE requests here.
        let ports = region_ports::open(
            &a.common,
            a.num_server_ports,
            a.shm_key,
            a.rr_size,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            a.num_clients,
            |_| Ok(()),
        )?;
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
        let mut watches = Vec::with_capacity(a.num_clients);
        for c in 0..a.num_clients {
            let p = c % a.num_server_ports;
            let me = format!("master-{p}-{c}");
            let (qp, remote) =
                ports[p].accept(qp_type, reg, &me, &format!("client-conn-{c}"), &a.common)?;
            runs.push(remote.run_id);
            // A client killed mid-run leaves no done marker: the run ends as "peer lost".
            watches.push(reg.watch(
                &format!("client-conn-{c}"),
                remote.run_id,
                &format!("client-{c}"),
            ));
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
