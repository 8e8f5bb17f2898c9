//! The master: it creates the request region (a SysV segment every server port registers,
//! remote-write only), connects one QP per client over it, publishes the slot layout every role
//! must agree on, and leaves once every client is done.

use std::sync::Arc;

use super::{RpcArgs, RpcShape};
use crate::bench::common::require;
use crate::bench::endpoint::{idle_until_peer_done, publish_done};
use crate::bench::region_ports;
use crate::bench::runner::{run_threads, Role};
use crate::error::Result;
use crate::registry::Registry;
use crate::stats::RunInfo;
use crate::verbs::{Access, QpInfo, QpType};

/// Registry name of the master's entry (workers wait for it before attaching the region).
pub const MASTER: &str = "master";

/// Runs the master until every client is done (or the run is stopped).
pub fn run_master(shape: RpcShape<'_>, a: &RpcArgs, reg: &Arc<Registry>) -> Result<()> {
    let common = &a.common;
    let info = RunInfo {
        bench: shape.bench,
        role: "Master",
        op: "WRITE",
        size: shape.size,
        postlist: 1,
        first_id: 0,
        json: common.json,
    };
    println!(
        "main: Master with {} server ports, request region {} KiB (SysV key {}), {:.2} % used",
        a.num_server_ports,
        a.rr_size / 1024,
        a.shm_key,
        100.0 * a.layout(shape.slot_bytes).check(a.rr_size)? as f64 / a.rr_size as f64
    );
    run_threads(info, Role::Passive, 1, common, |_, _| {
        // Clients only WRITE requests here.
        let ports = region_ports::open(
            common,
            a.num_server_ports,
            a.shm_key,
            a.rr_size,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            a.num_clients,
            |_| Ok(()),
        )?;
        reg.publish_result(MASTER, shape.fields)?;
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
                ports[p].accept(qp_type, reg, &me, &format!("client-conn-{c}"), common)?;
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

/// Refuses a worker or client whose slot layout (`fields`) differs from the master's: it would
/// poll or write the wrong slots and hang.
pub fn check_layout(reg: &Registry, fields: &[(&'static str, u64)], master_run: u64) -> Result<()> {
    // An earlier master's record (it outlives its run for a minute) says nothing about this one.
    let Some(rec) = reg
        .lookup_result(MASTER)?
        .filter(|r| r.run_id == master_run)
    else {
        return Ok(());
    };
    for &(k, v) in fields {
        if let Some(m) = rec.get(k) {
            require(m == v, || {
                let all: Vec<String> = fields.iter().map(|(k, _)| format!("--{k}")).collect();
                format!(
                    "the master runs with --{k} {m} but this process with --{k} {v}: master, \
                     workers and clients need the same {}",
                    all.join(", ")
                )
            })?;
        }
    }
    Ok(())
}
