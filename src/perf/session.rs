//! One side of a perftest-style test: the device, the exchange channel (TCP, or RDMA CM with
//! `-R`), the QPs and the MR (one per QP with `--mr_per_qp`), laid out as perftest lays them out ([`super::layout`]) so that
//! either side may be perftest itself.

use std::sync::Arc;
use std::time::Duration;

use super::args::PerfArgs;
use super::channel::{Channel, Wait};
use super::cm_connect::cm_channel;
use super::credits::Credits;
use super::keys::Dest;
use super::layout::{local_page_and_line, mtu_bytes, Geometry};
use super::provider::check_device;
use super::report::{address_lines, TestInfo, WAITING_BANNER};
use super::settings::Settings;
use super::{Test, Verb};
use crate::control::Attention;
use crate::counters::{Named, PortRef, Watch};
use crate::error::{Error, Result};
use crate::hot::{RecvBatch, Remote, SendBatch, SendSpec};
use crate::mem::{FileBuffer, HugePolicy, Placement};
use crate::verbs::{
    Access, AddressHandle, ConnectParams, Gid, IpGroup, MemoryRegion, Port, QpCaps, QpInfo, QpSpec,
    QpType, QueuePair, Resources, SharedReceiveQueue,
};

/// One side, connected to its peer's channel, with its QPs made (not yet connected).
pub struct Session {
    /// The settings.
    pub settings: Settings,
    /// The TCP channel to the peer.
    pub channel: Channel,
    /// The port.
    pub port: Port,
    /// The QPs, one per `-q`.
    pub qps: Vec<QueuePair>,
    /// `-g` on a receiving side: the group its QP joined, and this host's membership of the
    /// group's IP address (RoCE v2).
    _joined: Option<(Gid, Option<IpGroup>)>,
    /// `--use-srq` on a receiving side: the one queue every QP's RECVs come from.
    pub(super) srq: Option<Arc<SharedReceiveQueue>>,
    /// QP `i`'s MR: the same one for every QP, or with `--mr_per_qp` one each (as perftest's
    /// `ctx->mr[i]`).
    pub mrs: Vec<Arc<MemoryRegion>>,
    /// Buffer layout.
    pub geo: Geometry,
    /// Our QPs as the peer sees them.
    pub my: Vec<Dest>,
    /// The peer's QPs.
    pub rem: Vec<Dest>,
    /// UD: per QP, the address handle and QP number of the peer's QP of the same index.
    pub(super) ud_peers: Vec<(Arc<AddressHandle>, u32)>,
    /// UD: the Q_Key both sides' QPs take (libhrd's and perftest's default; the CM's with -R).
    pub(super) ud_qkey: u32,
    /// iWARP send-bw: perftest's credit words ([`Credits`]).
    pub(super) credits: Option<Credits>,
    /// Key messages carry GIDs (RoCE, or `-x`).
    pub with_gid: bool,
    /// Inline limit in effect.
    pub inline: u32,
    /// Outstanding reads we accept.
    pub out_reads: u32,
    /// Agreed path MTU (`ibv_mtu` value).
    pub mtu: u32,
    /// Initial PSN of our QPs.
    psn: u32,
    /// ACK timeout exponent (-u).
    pub(super) qp_timeout: u8,
    /// The run's attention: every wait and loop of the test ends on a stop.
    pub attention: Attention,
    /// The port's counters from the start of the test (the verdict under the table).
    pub watch: Watch,
    /// `-W`: the counters reported after each row.
    pub named: Option<Named>,
    /// The test QPs' RDMA CM connections (`-R`), one per QP.
    #[cfg(has_rdmacm)]
    pub(super) cm_ids: Vec<crate::verbs::cm::CmId>,
    /// `-R -c UD`: the ids of the UD lookups (nothing to disconnect).
    #[cfg(has_rdmacm)]
    pub(super) cm_ud_ids: Vec<crate::verbs::cm::CmId>,
}

/// One of the test's MRs: on hugepages (`--use_hugepages`), or on the `--mmap` file's pages;
/// registered on demand with `--odp`, which a device without ODP refuses.
fn register_buffer(
    res: &Resources,
    settings: &Settings,
    len: usize,
    hugepages: bool,
) -> Result<Arc<MemoryRegion>> {
    let ctx = res.pd().context();
    let mut access = super::provider::mr_access(ctx, settings.tool.verb);
    if settings.odp {
        access = access | Access::ON_DEMAND;
    }
    let registered = match &settings.mmap {
        Some((file, offset)) => {
            let buf = FileBuffer::map(std::path::Path::new(file), *offset, len)?;
            res.register(buf, access)
        }
        None => {
            let huge = if hugepages {
                HugePolicy::Require
            } else {
                HugePolicy::Off
            };
            let place = Placement {
                huge,
                numa_node: None,
            };
            res.region(len, place, access)
        }
    };
    match registered {
        Err(e) if settings.odp => Err(super::provider::odp_refusal(ctx, e)),
        r => r,
    }
}

/// The QP number a UD SEND to a multicast group carries (IBA's 0xFFFFFF).
const QPN_MULTICAST: u32 = 0xff_ffff;

/// Refuses `-g` where this side cannot take part: on InfiniBand (a group is joined through the
/// subnet administrator there, by the sender too), or, for the group it would join (`joins`), on
/// RoCE v2 when the group is of another IP family than the port's GID.
fn check_group(port: &Port, joins: Option<Gid>) -> Result<()> {
    if !port.addressed_by_gid() {
        return Err(Error::config(format!(
            "-g/--mcg: {} port {} is InfiniBand, where a group is joined through the subnet \
             administrator (a MAD sent with libibumad), which rdma-bench does not send",
            port.context().name(),
            port.num()
        )));
    }
    let Some(group) = joins else {
        return Ok(());
    };
    if port.is_roce_v2() && group.ipv4().is_some() != port.gid().ipv4().is_some() {
        let (g, p) = if group.ipv4().is_some() {
            ("IPv4", "IPv6")
        } else {
            ("IPv6", "IPv4")
        };
        return Err(Error::config(format!(
            "-g/--mcg: the group {group} is {g} and {} GID index {} ({}) is {p}; RoCE v2 sends \
             to a group of its GID's family: give -M an {p} group (e.g. {}) or -x a GID of the \
             group's family",
            port.context().name(),
            port.gid_index(),
            port.gid(),
            if p == "IPv4" {
                "-M 0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1"
            } else {
                "-M 255:2:0:0:0:0:0:0:0:0:0:0:0:0:1:1"
            }
        )));
    }
    Ok(())
}

/// Attaches `qp` to `group`, after this host joined the group's IP address where packets are
/// IP (RoCE v2).
fn join_group(port: &Port, qp: &mut QueuePair, group: Gid) -> Result<Option<IpGroup>> {
    let named = |e: Error| Error::config(format!("-g/--mcg (group {group}, -M to change it): {e}"));
    let ip = IpGroup::join(port, group).map_err(named)?;
    qp.attach_multicast(group, 0).map_err(named)?;
    Ok(ip)
}

/// The notices perftest writes to stderr (`fprintf(stderr, …)`, after a rule line on stdout);
/// the others go to stdout, as its `printf`s.
const ON_STDERR: &[&str] = &[
    " Number of outstanding reads is above max",
    " CPU Utilization works only",
];

impl Session {
    /// Opens the device, reaches the peer, agrees on versions, page size and MTU, and makes the
    /// QPs and the MR; prints perftest's banner and information block on the way.
    pub fn open(mut settings: Settings, a: &PerfArgs, attention: Attention) -> Result<Session> {
        let tool = settings.tool;
        if let Some(ip) = settings.source_ip {
            // An address this host does not have would fail at bind, after the device is open.
            std::net::UdpSocket::bind((ip, 0)).map_err(|e| {
                Error::config(format!(
                    "--source_ip {ip}: not an address of this host ({e})"
                ))
            })?;
        }
        // With -R the route to the server names the device, and the exchange runs over RDMA
        // CM; otherwise the device comes first (a bad -d fails before any peer is bothered).
        let (port, mut channel) = if settings.exchange_over_cm {
            // A -d that cannot run the tool is refused before the peer is reached.
            if let Some(d) = a.ib_dev.as_deref() {
                check_device(&crate::verbs::Context::open(d)?, &settings, a)?;
            }
            let (c, p) = cm_channel(a, &settings, attention)?;
            (p, Some(c))
        } else {
            // perftest's -i: port N of the device (-d, or here the first with an ACTIVE
            // port), not the N-th ACTIVE port of any device.
            let ctx = match a.ib_dev.as_deref() {
                Some(d) => crate::verbs::Context::open(d)?,
                None => crate::verbs::Context::open_first_active()?.0,
            };
            let port = Port::open_preferring(&ctx, a.ib_port, a.gid_index, settings.prefer_ipv6)?;
            (port, None)
        };
        // --force-link: an InfiniBand port may be addressed by GID (the GRH), a RoCE port only so.
        let forced_gid = match (settings.force_link, port.is_roce()) {
            (Some(super::settings::ForcedLink::Ib), true) => {
                return Err(Error::config(format!(
                    "--force-link IB: {} port {} is Ethernet (RoCE), whose QPs are addressed by \
                     GID only",
                    port.context().name(),
                    port.num()
                )))
            }
            (Some(super::settings::ForcedLink::Ethernet), false) => true,
            _ => false,
        };
        check_device(port.context(), &settings, a)?;
        // -g: the receiving side (both of a latency test) joins a group before any peer is
        // reached; a sender on InfiniBand would have to join too.
        let receives = tool.test == Test::Lat || !settings.is_client;
        if let Some(group) = settings.mcast_group {
            check_group(&port, receives.then_some(group))?;
        }
        if let Some(limit) = settings.rate {
            let ethernet = port.is_roce() || port.context().is_iwarp();
            settings.rate = Some(limit.on_link(port.context().name(), ethernet)?);
        }
        if let Some((file, _)) = &settings.mmap {
            FileBuffer::check(std::path::Path::new(file))?;
        }
        let port = settings.qos.apply(port)?;
        if let Some(note) = port.gid_note() {
            // On stderr: stdout stays perftest's.
            eprintln!("warning: {note}");
        }
        let ctx = port.context();
        // The port's counters: -W's, and all of them for the verdict under the table.
        let sys = std::path::Path::new("/sys");
        let here = PortRef {
            device: ctx.name().to_string(),
            port: port.num(),
        };
        let named = match &a.report_counters {
            Some(list) => Some(Named::open(sys, &here, list).map_err(Error::Config)?),
            None => None,
        };
        let tolerance = a.counter_tolerance.clone().unwrap_or_default();
        let watch = Watch::start(sys, &[here], tolerance);
        if let Some(v) = settings.events {
            let n = ctx.num_comp_vectors();
            if v >= n {
                return Err(Error::config(format!(
                    "Completion vector specified is invalid: max completion vector = {}",
                    i64::from(n) - 1
                )));
            }
        }
        let with_gid = port.addressed_by_gid() || a.gid_index.is_some() || forced_gid;
        let (vendor, part) = ctx.vendor_ids()?;
        let dev_reads = ctx.max_qp_rd_atom()?.clamp(1, 255);
        let mut notices = settings.notices.clone();
        let out_reads = match tool.verb {
            Verb::Read | Verb::Atomic => match settings.out_reads_request {
                Some(o) if o > dev_reads => {
                    notices.push(format!(
                        " Number of outstanding reads is above max = {dev_reads}\n Changing to that max value"
                    ));
                    dev_reads
                }
                Some(o) => o,
                None => dev_reads,
            },
            Verb::Write | Verb::Send => 1,
        };
        // perftest disables a requested inline size on a device it does not know (Soft-RoCE
        // among them), with a line to say so; the same here, or the two would post differently.
        let inline_refused = matches!(tool.verb, Verb::Write | Verb::Send)
            && settings.inline_request.is_some()
            && !super::provider::inline_recognized(vendor, part);
        let inline = match (tool.verb, settings.inline_request) {
            (Verb::Read | Verb::Atomic, _) => 0,
            (_, Some(_)) if inline_refused => 0,
            (_, Some(i)) => i,
            (_, None) => super::provider::default_inline(vendor, part, tool, settings.qp_type),
        };
        let active = port.attr().active_mtu;
        let local_mtu = match settings.mtu {
            Some(m) if m > active => {
                notices.push(format!(
                    "Requested mtu is higher than active mtu \nChanging to active mtu - {active}"
                ));
                active
            }
            Some(m) => m,
            None => active,
        };

        let mut channel = match (channel.take(), &a.server) {
            (Some(c), _) => c,
            (None, Some(host)) => Channel::connect(
                settings.source_ip,
                settings.family,
                host,
                a.port,
                Duration::from_secs(a.connect_timeout),
                attention,
            )?,
            (None, None) => {
                if settings.output.is_none() {
                    println!("{WAITING_BANNER}");
                }
                Channel::accept(settings.source_ip, settings.family, a.port, attention)?
            }
        };
        let (page, line) = local_page_and_line();
        // --dont_xchg_versions: the peer (told the same) is taken to be like this side.
        let (cycle, line, mtu) = if settings.exchange_versions {
            channel.exchange_versions()?;
            let (cycle, line) = channel.exchange_sys_data(page, line)?;
            (cycle, line, channel.exchange_mtu(local_mtu)?)
        } else {
            channel.assume_own_version();
            (page, line, local_mtu)
        };
        if let Some(n) = settings.fit_ud_to_mtu(u64::from(mtu_bytes(mtu)))? {
            notices.push(n);
        }

        let nq = settings.qps;
        let mut geo = Geometry::new(
            u64::from(cycle),
            u64::from(line),
            settings.alloc_size,
            u64::from(nq),
        );
        if settings.qp_type == QpType::Ud {
            geo = geo.for_ud();
        }
        if settings.mr_per_qp {
            geo = geo.one_mr_per_qp();
        }
        let res = Resources::new(&port)?;
        let (send_cq, recv_cq) = match settings.events {
            None => (
                res.cq(settings.tx_depth * nq)?,
                res.cq(settings.rx_depth * nq)?,
            ),
            Some(vector) => (
                res.cq_with_events(settings.tx_depth * nq, vector)?,
                res.cq_with_events(settings.rx_depth * nq, vector)?,
            ),
        };
        let caps = QpCaps {
            max_send_wr: settings.tx_depth,
            max_recv_wr: settings.rx_depth,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: inline,
        };
        // --use-srq: one queue of rx_depth RECVs for every QP, as perftest's receiving sides.
        let srq = settings
            .srq_here
            .then(|| res.srq(settings.rx_depth))
            .transpose()
            .map_err(|e| Error::config(format!("--use-srq -r {}: {e}", settings.rx_depth)))?;
        let mut qps = Vec::with_capacity(nq as usize);
        for _ in 0..nq {
            let spec = QpSpec::new(settings.qp_type, caps);
            let qp = match &srq {
                Some(srq) => res.qp_on_srq(spec, &send_cq, &recv_cq, srq),
                None => res.qp_on(spec, &send_cq, &recv_cq),
            }
            .map_err(|e| match e.errno() {
                Some(libc::EINVAL | libc::ENOMEM) => Error::config(format!(
                    "the device refused a QP of depth {} with {inline} bytes inline ({e}): \
                         try a smaller -t or -I",
                    settings.tx_depth
                )),
                _ => e,
            })?;
            if qp.caps().max_inline_data < inline {
                return Err(Error::config(format!(
                    "inline size {inline} is above what {} grants ({})",
                    ctx.name(),
                    qp.caps().max_inline_data
                )));
            }
            qps.push(qp);
        }
        let mut registered = Vec::with_capacity(geo.mrs() as usize);
        for _ in 0..geo.mrs() {
            let mr = register_buffer(&res, &settings, geo.mr_len() as usize, a.use_hugepages)?;
            mr.fill(0);
            registered.push(mr);
        }
        let mrs: Vec<_> = (0..nq as usize)
            .map(|i| Arc::clone(&registered[i % registered.len()]))
            .collect();
        // -g: the receiving side's QP joins the group (both sides of a latency test); its key
        // message then names the group, and perftest's QPN for multicast.
        let mcast = match settings.mcast_group {
            Some(group) if receives => Some((group, join_group(&port, &mut qps[0], group)?)),
            _ => None,
        };
        // iWARP: send-bw's SENDs are paced by perftest's credit words, whose keys the key
        // messages carry instead of the buffer's.
        let credits = (ctx.is_iwarp() && tool == super::Tool::SEND_BW)
            .then(|| Credits::new(&res, nq as usize, settings.rx_depth, settings.tx_depth))
            .transpose()?;
        // perftest draws its PSN at random; any 24-bit value works, as each side tells the other.
        let psn = (crate::kv::splitmix64(
            u64::from(std::process::id()) ^ crate::stats::CycleClock::new().stamp(),
        ) & 0xff_ffff) as u32;
        let my = qps
            .iter()
            .enumerate()
            .map(|(i, qp)| Dest {
                lid: if mcast.is_some() { 0 } else { port.attr().lid },
                out_reads,
                qpn: if mcast.is_some() {
                    QPN_MULTICAST
                } else {
                    qp.qp_num()
                },
                psn,
                rkey: credits.as_ref().map_or(mrs[i].rkey(), |c| c.key(i).0),
                vaddr: credits
                    .as_ref()
                    .map_or(mrs[i].addr() as u64 + geo.exposed(i as u64), |c| c.key(i).1),
                gid: match &mcast {
                    Some((group, _)) => group.0,
                    None if with_gid => port.gid().0,
                    None => [0; 16],
                },
                srqn: 0,
            })
            .collect();
        let mut s = Session {
            settings,
            channel,
            port,
            qps,
            _joined: mcast,
            srq,
            mrs,
            geo,
            my,
            rem: Vec::new(),
            ud_peers: Vec::new(),
            ud_qkey: crate::verbs::defaults::QKEY,
            credits,
            with_gid,
            inline,
            out_reads,
            mtu,
            psn,
            qp_timeout: a.qp_timeout,
            attention,
            watch,
            named,
            #[cfg(has_rdmacm)]
            cm_ids: Vec::new(),
            #[cfg(has_rdmacm)]
            cm_ud_ids: Vec::new(),
        };
        if a.rdma_cm {
            s.connect_through_cm(a)?;
        }
        for n in &notices {
            println!("{}", super::report::RESULT_LINE);
            if ON_STDERR.iter().any(|p| n.starts_with(p)) {
                eprintln!("{n}");
            } else {
                println!("{n}");
            }
        }
        if inline_refused {
            println!("{}", super::report::RESULT_LINE);
            eprintln!("Device not recognized to implement inline feature. Disabling it");
        }
        if s.settings.output.is_none() {
            println!("{}", s.info().block());
        }
        Ok(s)
    }

    /// What the information block and the JSON's test_info show.
    pub fn info(&self) -> TestInfo<'_> {
        TestInfo {
            settings: &self.settings,
            device: self.port.context().name(),
            mtu_bytes: mtu_bytes(self.mtu),
            link: match (self.settings.force_link, self.port.is_roce()) {
                (Some(super::settings::ForcedLink::Ethernet), _) | (None, true) => "Ethernet",
                _ => "IB",
            },
            gid_index: self.with_gid.then(|| self.port.gid_index()),
            inline: self.inline,
            out_reads: self.out_reads,
        }
    }

    /// One key exchange per QP (perftest's `ctx_hand_shake` loop); keeps the peer's keys.
    pub fn exchange_keys(&mut self) -> Result<()> {
        let mut rem = Vec::with_capacity(self.my.len());
        for d in &self.my {
            let mut r = self.channel.hand_shake(d, self.with_gid, Wait::Setup)?;
            // --dlid: every path goes to this LID instead (and the address line shows it).
            if let Some(lid) = self.settings.dlid {
                r.lid = lid;
            }
            rem.push(r);
        }
        self.rem = rem;
        if let Some(c) = self.credits.as_mut() {
            c.connect(&mut self.qps, &self.rem)?;
        }
        Ok(())
    }

    /// A bare handshake: both sides reached this point. `Wait::Test` when the peer may be
    /// running its test meanwhile.
    pub fn sync(&mut self, wait: Wait) -> Result<()> {
        let mine = self.my[0];
        self.channel
            .hand_shake(&mine, self.with_gid, wait)
            .map(|_| ())
    }

    /// Connects every QP to the peer's (perftest's `ctx_connect`): both sides' GIDs must be of
    /// the same family, and each side's read depth is what the other advertised. With `-R` the
    /// QPs are connected already.
    pub fn connect(&mut self) -> Result<()> {
        if self.settings.rdma_cm {
            return Ok(());
        }
        if self.with_gid
            && self.port.gid().ipv4().is_some() != Gid(self.rem[0].gid).ipv4().is_some()
        {
            return Err(Error::config(
                "Found Incompatibility issue with GID types: one side uses an IPv4 GID, the \
                 other an IPv6 one (pick matching GIDs with -x)",
            ));
        }
        let dev_reads = self.port.context().max_qp_rd_atom()?.clamp(1, 255);
        for (i, qp) in self.qps.iter_mut().enumerate() {
            let r = &self.rem[i];
            let remote = QpInfo {
                qpn: r.qpn,
                psn: r.psn,
                lid: r.lid,
                gid: r.gid,
                buf_addr: r.vaddr,
                buf_size: 0,
                rkey: r.rkey,
                // perftest's exchange agreed on the MTU already (ConnectParams::path_mtu).
                mtu: 0,
                // perftest's own read depths are set explicitly below.
                rd_atomic: 0,
            };
            let qos = self.settings.qos.on_port(&self.port, i);
            if qp.qp_type() == QpType::Ud {
                // UD QPs are ready already; a SEND names its peer through an AH.
                let port = self.port.clone().with_qos(qos)?;
                let ah = AddressHandle::new(qp.pd(), &port, &remote)?;
                self.ud_peers.push((ah, r.qpn));
                if Gid(r.gid).is_multicast() {
                    // perftest's pause before the first SEND to a group: a switch may take
                    // ~10 ms to act on the receiver's join.
                    std::thread::sleep(Duration::from_millis(50));
                }
                continue;
            }
            let p = ConnectParams {
                path_mtu: Some(self.mtu),
                max_rd_atomic: r.out_reads.clamp(1, dev_reads) as u8,
                max_dest_rd_atomic: self.out_reads as u8,
                sq_psn: self.psn,
                timeout: self.qp_timeout,
                qos: Some(qos),
            };
            // perftest's initiator depth is the peer's -o; a device that initiates fewer is
            // said once (perftest says nothing), so that a READ rate is read with its depth.
            let depth = qp.connect_with(&remote, &p)?;
            if i == 0 {
                if let Some(n) = depth.note(self.port.context().name()) {
                    eprintln!("note: {n}");
                }
            }
        }
        Ok(())
    }

    /// QP `q`'s batch of `spec`: to the peer's QP `q` (its buffer `remote` for RDMA), or over
    /// UD through the QP's address handle.
    pub fn send_batch(
        &mut self,
        q: usize,
        spec: SendSpec,
        remote: Option<Remote>,
    ) -> Result<SendBatch> {
        let (qp, mr) = (&mut self.qps[q], &self.mrs[q]);
        match self.ud_peers.get(q) {
            Some((ah, qpn)) => {
                let mut b = SendBatch::new_ud(qp, mr, spec, ah, *qpn)?;
                b.set_ud_qkey(self.ud_qkey)?;
                Ok(b)
            }
            None => SendBatch::new(qp, mr, spec, remote),
        }
    }

    /// QP `q`'s RECV of a `size`-byte message (with room for the GRH over UD).
    pub fn recv_batch(&mut self, q: usize, size: u64) -> Result<RecvBatch> {
        self.recv_chain(q, size, 1)
    }

    /// `n` chained RECVs into QP `q`'s one receive slot (`--recv_post_list`), for that QP's
    /// receive queue, or with `--use-srq` for the shared one (any QP may then consume them).
    pub fn recv_chain(&mut self, q: usize, size: u64, n: usize) -> Result<RecvBatch> {
        let (off, len) = self.geo.recv_slot(q as u64, size);
        self.recvs_at(q, off as usize, len as u32, n)
    }

    /// `n` chained RECVs of `len` bytes at `off` in QP `q`'s MR, for QP `q`'s receive queue or the
    /// shared one.
    pub(super) fn recvs_at(
        &mut self,
        q: usize,
        off: usize,
        len: u32,
        n: usize,
    ) -> Result<RecvBatch> {
        match &self.srq {
            Some(srq) => RecvBatch::for_srq(srq, &self.mrs[q], n, len, off, 0),
            None => RecvBatch::new(&mut self.qps[q], &self.mrs[q], n, len, off, 0),
        }
    }

    /// The local (`remote` false) or remote address lines.
    pub fn print_addresses(&self, remote: bool) {
        if self.settings.output.is_some() {
            return;
        }
        let (side, dests) = if remote {
            ("remote", &self.rem)
        } else {
            ("local", &self.my)
        };
        for d in dests {
            println!(
                "{}",
                address_lines(side, d, self.settings.tool.verb, self.with_gid)
            );
        }
    }
}
