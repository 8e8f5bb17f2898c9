//! Devices and ports: driver, firmware, PCIe, NUMA, port state, MTU, addressing, GIDs.

use std::path::Path;

use super::{finding, read_trim, Finding, Verdict};
use crate::verbs::{self, Context, LinkLayer, PortState};

/// The devices and their ports.
pub(super) fn devices(only: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    let names = match verbs::devices() {
        Ok(n) => n,
        Err(e) => {
            out.push(no_device(format!("cannot list RDMA devices: {e}")));
            return out;
        }
    };
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| only.is_none_or(|o| o == n))
        .collect();
    if names.is_empty() {
        out.push(no_device(match only {
            Some(d) => format!("no RDMA device called {d}"),
            None => "no RDMA device".into(),
        }));
        return out;
    }
    let mut active = 0;
    for name in &names {
        match Context::open(name) {
            Ok(ctx) => active += device(&ctx, &mut out),
            Err(e) => out.push(finding(
                Verdict::Fail,
                &format!("device {name}"),
                format!("cannot open: {e}"),
                Some(
                    "check the driver's kernel log (dmesg) and /dev/infiniband permissions".into(),
                ),
            )),
        }
    }
    if active == 0 {
        out.push(finding(
            Verdict::Fail,
            "ports",
            "no ACTIVE port: every benchmark needs one".into(),
            Some("connect the cable / bring the link up (`ip link set <netdev> up` on RoCE; a subnet manager such as opensm on InfiniBand)".into()),
        ));
    }
    out
}

fn no_device(text: String) -> Finding {
    finding(
        Verdict::Fail,
        "devices",
        text,
        Some("load the NIC's RDMA driver (e.g. `modprobe mlx5_ib`), or for a software device `modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <if>` (bench_scripts/softroce.sh runs one in a VM)".into()),
    )
}

/// One device: driver, firmware, PCIe, NUMA, then its ports; returns its ACTIVE ports.
fn device(ctx: &Context, out: &mut Vec<Finding>) -> usize {
    let name = ctx.name();
    let subject = format!("device {name}");
    let sys = format!("/sys/class/infiniband/{name}");
    let (driver, soft) = driver(name);
    let fw = ctx.fw_version().unwrap_or_default();
    out.push(finding(
        Verdict::Ok,
        &subject,
        format!(
            "driver {driver}, firmware {}",
            if fw.is_empty() { "none reported" } else { &fw }
        ),
        None,
    ));
    out.push(provider_env(name, &subject));
    if soft {
        out.push(finding(
            Verdict::Warn,
            &subject,
            "a software RDMA device (Soft-RoCE/siw): absolute rates are the kernel's, not a NIC's; compare ratios measured in the same run only".into(),
            Some("run on a hardware RDMA NIC for numbers to report".into()),
        ));
    } else {
        out.extend(pcie(&subject, &format!("{sys}/device")));
    }
    let ports = ctx.port_count().unwrap_or(0);
    let mut active = 0;
    for p in 1..=ports {
        active += usize::from(port(ctx, p, out));
    }
    active
}

/// What a paper benchmark sets in the environment for device `name`'s provider
/// ([`provider_env`](crate::verbs::provider_env)), and whether the user's own settings undo the
/// original's single-threaded mode.
fn provider_env(name: &str, subject: &str) -> Finding {
    use crate::verbs::provider_env::{provider_of, KEEP_FLAG};
    let Some(p) = provider_of(Path::new(verbs::SYSFS_CLASS), name) else {
        return finding(
            Verdict::Ok,
            subject,
            "provider environment: none to set (the original's scripts set variables for mlx5 and mlx4 only)".into(),
            None,
        );
    };
    let mut locked = None;
    let words: Vec<String> = p
        .vars
        .iter()
        .map(|(var, value)| match std::env::var(var) {
            Ok(v) => {
                if var.ends_with("_SINGLE_THREADED") && v != "1" {
                    locked = Some(*var);
                }
                format!("{var}={v} (yours, kept)")
            }
            Err(_) => format!("{var}={value}"),
        })
        .collect();
    let text = format!(
        "provider environment ({}): a benchmark runs with {} (not with {KEEP_FLAG})",
        p.provider,
        words.join(", ")
    );
    match locked {
        None => finding(Verdict::Ok, subject, text, None),
        Some(var) => finding(
            Verdict::Warn,
            subject,
            format!("{text}; with {var} not 1 the provider locks on every post and poll, unlike the original's runs"),
            Some(format!("unset {var}")),
        ),
    }
}

/// The driver of device `name` as sysfs tells it (`mlx5_core`; `software, on netdev eth0` for
/// Soft-RoCE and siw; `unknown`), and whether it is a software device.
pub(crate) fn driver(name: &str) -> (String, bool) {
    let sys = format!("/sys/class/infiniband/{name}");
    let driver = verbs::kernel_driver(Path::new(verbs::SYSFS_CLASS), name);
    // Software devices (rxe, siw) name the netdev they run on in `parent`; hardware ones do not.
    let soft = name.starts_with("rxe")
        || name.starts_with("siw")
        || Path::new(&format!("{sys}/parent")).exists();
    let driver = match (driver, read_trim(&format!("{sys}/parent"))) {
        (_, Some(netdev)) if soft => format!("software, on netdev {netdev}"),
        (Some(d), _) => d,
        (None, _) if soft => "software".into(),
        (None, _) => "unknown".into(),
    };
    (driver, soft)
}

/// The firmware version of device `name` from sysfs (what `ibv_query_device` reports as
/// fw_ver), without opening the device; None when it reports none.
pub(crate) fn firmware(name: &str) -> Option<String> {
    read_trim(&format!("/sys/class/infiniband/{name}/fw_ver")).filter(|s| !s.is_empty())
}

/// PCIe link against the device's capability, and its NUMA node.
pub(super) fn pcie(subject: &str, dev: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let get = |f: &str| read_trim(&format!("{dev}/{f}"));
    if let (Some(cs), Some(cw), Some(ms), Some(mw)) = (
        get("current_link_speed"),
        get("current_link_width"),
        get("max_link_speed"),
        get("max_link_width"),
    ) {
        let full = cs == ms && cw == mw;
        // The kernel spells speeds "16.0 GT/s PCIe"; the suffix repeats what we already say.
        let (cs, ms) = (cs.trim_end_matches(" PCIe"), ms.trim_end_matches(" PCIe"));
        out.push(finding(
            if full { Verdict::Ok } else { Verdict::Warn },
            subject,
            format!("PCIe {cs} x{cw} (device capable of {ms} x{mw})"),
            (!full).then(|| {
                "the link trained below the device's capability: reseat the card or move it to a slot with the full width and generation".into()
            }),
        ));
    }
    match get("numa_node").and_then(|n| n.parse::<i32>().ok()) {
        Some(n) if n >= 0 => out.push(finding(
            Verdict::Ok,
            subject,
            format!("on NUMA node {n}: run benchmarks there (`--numa-node {n}`, or numactl --cpunodebind={n} --membind={n})"),
            None,
        )),
        _ => {}
    }
    out
}

/// One port: state, link, MTU, addressing; true if ACTIVE.
fn port(ctx: &Context, p: u8, out: &mut Vec<Finding>) -> bool {
    let subject = format!("port {}:{p}", ctx.name());
    let attr = match ctx.query_port(p) {
        Ok(a) => a,
        Err(e) => {
            out.push(finding(
                Verdict::Fail,
                &subject,
                format!("cannot query: {e}"),
                Some(
                    "check the driver's kernel log (dmesg); `ibv_devinfo -v` shows what verbs sees"
                        .into(),
                ),
            ));
            return false;
        }
    };
    let mtu = |m: u32| 128u32 << m.min(5);
    let rate = attr
        .gbps()
        .map(|g| format!(", {g} Gb/s"))
        .unwrap_or_default();
    let layer = match attr.link_layer {
        LinkLayer::Ethernet if ctx.is_iwarp() => "Ethernet (iWARP)",
        LinkLayer::Ethernet => "Ethernet (RoCE)",
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Unspecified => "link layer unspecified (EFA-like: addressed by GID)",
    };
    let active = attr.state == PortState::Active;
    out.push(finding(
        if active { Verdict::Ok } else { Verdict::Warn },
        &subject,
        format!(
            "{} ({}), {layer}{rate}, MTU {} (max {})",
            attr.state,
            attr.phys_state_name(),
            mtu(attr.active_mtu),
            mtu(attr.max_mtu)
        ),
        (!active).then(|| {
            "this port cannot carry a benchmark: bring its link up, or use an ACTIVE one (--port-index N counts ACTIVE ports across all devices; with --device it counts that device's ports from 0, DOWN ones included)".into()
        }),
    ));
    if !active {
        return false;
    }
    if attr.active_mtu < attr.max_mtu {
        let fix = match attr.link_layer {
            LinkLayer::Ethernet => "RoCE's MTU follows the netdev's: raise it (e.g. `ip link set <netdev> mtu 9000`, on the switch too)",
            LinkLayer::InfiniBand => "the subnet manager's partition MTU limits it (opensm: partitions.conf mtu=5)",
            LinkLayer::Unspecified => "the provider and its fabric set it (see the provider's documentation)",
        };
        out.push(finding(
            Verdict::Warn,
            &subject,
            format!(
                "active MTU {} is below the port's {}: large messages take more packets",
                mtu(attr.active_mtu),
                mtu(attr.max_mtu)
            ),
            Some(fix.into()),
        ));
    }
    match attr.link_layer {
        LinkLayer::InfiniBand if attr.lid == 0 => out.push(finding(
            Verdict::Fail,
            &subject,
            "LID 0: no subnet manager has configured this port".into(),
            Some("start a subnet manager on the fabric (e.g. `systemctl start opensm`)".into()),
        )),
        LinkLayer::InfiniBand => out.push(finding(
            Verdict::Ok,
            &subject,
            format!("LID {}, subnet manager at LID {}", attr.lid, attr.sm_lid),
            None,
        )),
        LinkLayer::Ethernet if ctx.is_iwarp() => out.push(iwarp(ctx, p, &subject)),
        LinkLayer::Ethernet => out.push(gids(ctx, p, attr.gid_tbl_len, &subject)),
        LinkLayer::Unspecified => out.push(finding(
            Verdict::Ok,
            &subject,
            format!("no LID: peers are addressed by GID {}", ctx.gid(p, 0).map(|g| g.to_string()).unwrap_or_default()),
            Some("if this is an InfiniBand port, no subnet manager has configured it yet (e.g. `systemctl start opensm`)".into()),
        )),
    }
    out.push(counters(ctx.name(), p, &subject));
    true
}

/// The port's error counters as they stand (ibqueryerrors' rule: any error counter above 0 is a
/// finding). They count since the driver loaded; a run's own counters line says what moved
/// during it.
fn counters(dev: &str, p: u8, subject: &str) -> Finding {
    use crate::counters::{class_of, snapshot, Class, PortRef};
    let port = PortRef {
        device: dev.to_string(),
        port: p,
    };
    let snap = snapshot(std::path::Path::new("/sys"), &port);
    if let Some(why) = snap.unavailable {
        return finding(
            Verdict::Warn,
            subject,
            format!("counters unavailable: {why}; results will say \"counters unavailable\""),
            None,
        );
    }
    let errors: Vec<String> = snap
        .values
        .iter()
        .filter(|(name, &v)| {
            v > 0
                && matches!(
                    class_of(name.strip_prefix("counters/").unwrap_or(name)),
                    Class::Retransmission | Class::Rnr | Class::Link | Class::Fatal
                )
        })
        .map(|(name, v)| format!("{name} {v}"))
        .collect();
    if errors.is_empty() {
        return finding(
            Verdict::Ok,
            subject,
            format!("{} counters, no error counter above 0", snap.values.len()),
            None,
        );
    }
    finding(
        Verdict::Warn,
        subject,
        format!(
            "error counters already above 0 (since the driver loaded): {}",
            errors.join(", ")
        ),
        Some(
            "find the cause (cabling, MTU, congestion, a peer that died) before trusting numbers; \
             each run's counters line shows only what moved during it"
                .into(),
        ),
    )
}

/// An iWARP port: where RDMA CM reaches it, and what runs on it.
fn iwarp(ctx: &Context, p: u8, subject: &str) -> Finding {
    let ips: Vec<String> = ctx.iwarp_addrs(p).iter().map(|a| a.to_string()).collect();
    let what = "iWARP: QPs connect only through RDMA CM, so the perftest tools run here with -R and the paper benchmarks and applications refuse it";
    if ips.is_empty() {
        finding(
            Verdict::Warn,
            subject,
            format!("{what}; its netdev has no IP address, so RDMA CM cannot reach it"),
            Some("give the netdev an address (`ip addr add <a.b.c.d/n> dev <netdev>`)".into()),
        )
    } else {
        finding(
            Verdict::Warn,
            subject,
            format!("{what}; RDMA CM reaches it at {}", ips.join(", ")),
            Some("run the paper benchmarks on a RoCE or InfiniBand device (--device)".into()),
        )
    }
}

/// The GID table with types, and the index our tools pick.
fn gids(ctx: &Context, p: u8, len: u32, subject: &str) -> Finding {
    let zero = verbs::Gid::default();
    let table: Vec<String> = (0..len)
        .filter_map(|i| {
            let g = ctx.gid(p, i).ok().filter(|g| *g != zero)?;
            let t = ctx.gid_type(p, i).unwrap_or_else(|| "type unknown".into());
            Some(format!("{i}: {g} ({t})"))
        })
        .collect();
    let listed = if table.is_empty() {
        "no GIDs".to_string()
    } else {
        table.join(", ")
    };
    match ctx.roce_v2_ipv4_gid(p, len) {
        Some(i) => finding(
            Verdict::Ok,
            subject,
            format!("GIDs {listed}; our tools use index {i} (RoCE v2, IPv4)"),
            None,
        ),
        // The benchmarks then fall back to index 0, which must hold a GID.
        None => {
            let fix = Some("give the netdev an IPv4 address (`ip addr add <a.b.c.d/n> dev <netdev>`), or pass --gid-index".into());
            match ctx.gid(p, 0).ok().filter(|g| *g != zero) {
                Some(g) => finding(
                    Verdict::Warn,
                    subject,
                    format!(
                        "GIDs {listed}; none is RoCE v2 with an IPv4 address, so our tools fall back to index 0 ({g}, {})",
                        ctx.gid_type(p, 0).unwrap_or_else(|| "type unknown".into())
                    ),
                    fix,
                ),
                None => finding(
                    Verdict::Fail,
                    subject,
                    format!("GIDs {listed}; no RoCE v2 IPv4 GID and index 0 is empty: our tools cannot address this port"),
                    fix,
                ),
            }
        }
    }
}
