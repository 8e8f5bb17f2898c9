//! The master: it creates the request region (a SysV segment every server port registers,
//! remote-write only), connects one QP per client over it, publishes the slot layout every role
//! must agree on, and leaves once every client is done.

use std::sync::Arc;

use super::{RpcArgs, RpcShape};
use crate::error::Result;
use crate::framework::region::{self, RegionPort};
use crate::framework::{
    idle_until_peers_done, publish_done, require, Meter, Plan, Role, RollCall, ThreadCtx,
};
use crate::registry::{PeerWatch, Registry};
use crate::stats::RunInfo;
use crate::verbs::{Access, QpInfo, QpType, QueuePair};

/// Registry name of the master's entry (workers wait for it before attaching the region).
pub const MASTER: &str = "master";

/// The master: one thread that creates the request region, connects every client's QP over it,
/// publishes the layout and waits until every client is done.
pub struct Master<'a> {
    /// The benchmark's shape.
    pub shape: RpcShape<'a>,
    /// Its flags.
    pub args: &'a RpcArgs,
    /// The registry every role meets through.
    pub reg: Arc<Registry>,
}

/// The master's region (on every server port) and the clients' connections over it.
pub struct MasterLink {
    _ports: Vec<RegionPort>,
    _qps: Vec<QueuePair>,
    runs: Vec<u64>,
    _watches: Vec<PeerWatch>,
}

impl Master<'_> {
    /// Says what it makes (the master's first line), then runs it through the lifecycle.
    pub fn run(&self) -> Result<()> {
        self.announce()?;
        crate::framework::run(self, &self.args.common)?;
        Ok(())
    }

    fn announce(&self) -> Result<()> {
        let a = self.args;
        println!(
            "main: Master with {} server ports, request region {} KiB (SysV key {}), {:.2} % used",
            a.num_server_ports,
            a.rr_size / 1024,
            a.shm_key,
            100.0 * a.layout(self.shape.slot_bytes).check(a.rr_size)? as f64 / a.rr_size as f64
        );
        Ok(())
    }
}

impl Role for Master<'_> {
    type Thread = MasterLink;

    fn plan(&self) -> Plan {
        let info = RunInfo {
            bench: self.shape.bench,
            role: "Master",
            op: "WRITE",
            size: self.shape.size,
            postlist: 1,
            first_id: 0,
            json: self.args.common.json,
        };
        Plan::passive(info, 1).quiet()
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<MasterLink> {
        let (a, reg) = (self.args, &self.reg);
        // Clients only WRITE requests here.
        let ports = region::open(
            ctx,
            a.num_server_ports,
            a.shm_key,
            a.rr_size,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            a.num_clients,
            |_| Ok(()),
        )?;
        reg.publish_result(MASTER, self.shape.fields)?;
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
        let mut roll = RollCall::new("client", "--num-clients", a.num_clients);
        for c in 0..a.num_clients {
            let p = c % a.num_server_ports;
            let me = format!("master-{p}-{c}");
            let peer = format!("client-conn-{c}");
            let (qp, remote) = ports[p]
                .accept(qp_type, reg, &me, &peer, ctx.wait())
                .map_err(|e| roll.missing(e))?;
            roll.came();
            runs.push(remote.run_id);
            // A client killed mid-run leaves no done marker: the run ends as "peer lost".
            watches.push(reg.watch(&peer, remote.run_id, &format!("client-{c}")));
            qps.push(qp);
        }
        println!("main: Master connected all {} clients", a.num_clients);
        Ok(MasterLink {
            _ports: ports,
            _qps: qps,
            runs,
            _watches: watches,
        })
    }

    fn measure(&self, link: &mut MasterLink, m: &mut Meter<'_>) -> Result<()> {
        let clients: Vec<(String, u64)> = (link.runs.iter().enumerate())
            .map(|(c, run)| (format!("client-{c}"), *run))
            .collect();
        idle_until_peers_done(&self.reg, &clients, m)
    }

    fn finish(&self, _link: MasterLink, _: &ThreadCtx<'_>) -> Result<()> {
        // Workers watch our entry: leaving on purpose is not dying.
        publish_done(&self.reg, MASTER)
    }
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
