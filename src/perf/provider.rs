//! What a device's provider allows a perftest tool, checked before any QP is made or peer
//! bothered: iWARP's rules (RDMA CM only, RC only), atomics, ODP, and the READ sink's access.

use super::args::PerfArgs;
use super::settings::Settings;
use super::Verb;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::mem::{HugeBuffer, HugePolicy, Placement};
use crate::verbs::{Access, Context, MemoryRegion, ProtectionDomain, QpType};

/// Refuses a tool the device cannot run, in one line naming the flag and the capability.
pub(super) fn check_device(ctx: &Arc<Context>, settings: &Settings, a: &PerfArgs) -> Result<()> {
    let name = ctx.name();
    if ctx.is_iwarp() {
        if !a.rdma_cm {
            return Err(Error::config(format!(
                "{name} is an iWARP device: its QPs connect only through RDMA CM: add -R"
            )));
        }
        if settings.tool == super::Tool::SEND_BW && settings.duplex {
            // The credit exchange that paces SENDs there is one-way here: with -b each
            // side's credit WRITEs would share the send queue with its own SENDs.
            return Err(Error::config(format!(
                "-b: {name} is an iWARP device, where send-bw paces its SENDs with perftest's \
                 credit exchange, which rdma-bench runs one way only: run send-bw without -b"
            )));
        }
        if settings.srq_here {
            return Err(Error::config(format!(
                "--use-srq: {name} is an iWARP device, where perftest's credit words keep each \
                 SEND behind a RECV posted for its QP, which a shared queue cannot promise"
            )));
        }
        match settings.qp_type {
            QpType::Rc => {}
            QpType::Uc => return Err(crate::verbs::iwarp::rc_only(name, "UC", "-c UC")),
            QpType::Ud if settings.mcast_group.is_some() => {
                return Err(Error::config(format!(
                    "-g/--mcg: {name} is an iWARP device, which has no UD QPs and no multicast"
                )))
            }
            QpType::Ud => return Err(crate::verbs::iwarp::rc_only(name, "UD", "-c UD")),
        }
    }
    if settings.tool.verb == Verb::Atomic && !ctx.supports_atomics()? {
        return Err(Error::config(format!(
            "{name} has no RDMA atomics (atomic_cap is IBV_ATOMIC_NONE): {} cannot run on it",
            settings.tool.name()
        )));
    }
    if settings.odp {
        // One page registered on demand, before any peer is reached.
        let pd = ProtectionDomain::new(ctx)?;
        let page = HugeBuffer::new(
            4096,
            Placement {
                huge: HugePolicy::Off,
                numa_node: None,
            },
        )?;
        let access = mr_access(ctx, settings.tool.verb) | Access::ON_DEMAND;
        MemoryRegion::register(&pd, page, access).map_err(|e| odp_refusal(ctx, e))?;
    }
    Ok(())
}

/// A registration with `--odp` that `ctx` refused: the capability it lacks, in one line.
pub(super) fn odp_refusal(ctx: &Context, e: Error) -> Error {
    match e.errno() {
        Some(libc::EOPNOTSUPP | libc::EINVAL) => Error::config(format!(
            "--odp: {} does not support on-demand paging (ibv_reg_mr with IBV_ACCESS_ON_DEMAND: {e})",
            ctx.name()
        )),
        _ => e,
    }
}

/// The MR's access for `verb` on `ctx`: an iWARP READ's sink is written by the responder (a
/// tagged write of the READ response), so it needs `REMOTE_WRITE` too, as perftest sets.
pub(super) fn mr_access(ctx: &Context, verb: Verb) -> Access {
    Access::LOCAL_WRITE
        | match verb {
            Verb::Write => Access::REMOTE_WRITE,
            Verb::Read if ctx.is_iwarp() => Access::REMOTE_READ | Access::REMOTE_WRITE,
            Verb::Read => Access::REMOTE_READ,
            Verb::Atomic => Access::REMOTE_ATOMIC,
            Verb::Send => Access::LOCAL_WRITE,
        }
}

/// Whether perftest knows the device (its `ib_dev_name`): on one it does not, it turns any
/// inline size asked for with `-I` to 0 ("Device not recognized to implement inline feature").
pub(super) fn inline_recognized(vendor: u32, part: u32) -> bool {
    family(vendor, part) != Family::Unknown
}

/// perftest's default inline size (`ctx_set_max_inline`) for `tool` over `qp_type` on the device
/// with PCI `vendor` and `part` ids: latency WRITEs 220 and SENDs 236 (188 over UD) on the
/// devices it knows, its per-vendor values where it has them, and 0 for bandwidth tests, READs,
/// atomics and devices it does not know (Soft-RoCE and siw among them).
pub(super) fn default_inline(vendor: u32, part: u32, tool: super::Tool, qp_type: QpType) -> u32 {
    use super::Test;
    if tool.test != Test::Lat || !matches!(tool.verb, Verb::Write | Verb::Send) {
        return 0;
    }
    let ud = qp_type == QpType::Ud;
    match family(vendor, part) {
        Family::Unknown => 0,
        Family::Generic => match tool.verb {
            Verb::Send if ud => 188,
            Verb::Send => 236,
            _ => 220,
        },
        Family::Fixed(n) => n,
        Family::ByQpType { ud: u, other } => {
            if ud {
                u
            } else {
                other
            }
        }
    }
}

/// How perftest's `ib_dev_name` classes a device, as far as inline defaults go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Not in its table: no inline.
    Unknown,
    /// Known, with the common defaults (Mellanox, Chelsio, QLogic AH, Emulex, Pensando …).
    Generic,
    /// Known, with one value of its own for every latency test.
    Fixed(u32),
    /// Known, with one value over UD and another over RC/UC.
    ByQpType { ud: u32, other: u32 },
}

fn family(vendor: u32, part: u32) -> Family {
    const MELLANOX: &[u32] = &[
        4099, 4100, 4103, 4104, 4113, 4115, 4116, 4117, 4118, 4119, 4120, 4121, 4122, 4123, 4124,
        4125, 4126, 4127, 4129, 4131, 4133, 4135, 41682, 41683, 41686, 41692, 41695, 26418, 26428,
        26438, 26448, 26458, 26468, 26478, 25408, 25418, 25428, 25448,
    ];
    // Emulex Skyhawk, QLogic AH / AHP.
    const OTHERS_KNOWN: &[u32] = &[1824, 32880, 32881, 32882, 32883, 32912, 33136, 33168];
    const NETXTREME: &[u32] = &[
        5638, 5652, 5824, 5825, 5827, 5839, 5846, 5847, 5848, 5849, 5855, 5858, 5859, 5861, 5867,
        5869, 5871, 5872, 5873, 5968, 5984, 6169, 55296, 55298, 55300,
    ];
    const QLOGIC_E4: &[u32] = &[5684, 5700, 5716, 5718, 5734];
    const HNS: &[u32] = &[41506, 41507, 41508, 41509, 41510, 41512, 41519];
    match vendor {
        // Chelsio: T4, T5, T6 by the part id's top nibble.
        5157 if matches!(part >> 12, 4 | 5 | 6 | 10 | 11) => Family::Generic,
        5157 => Family::Unknown,
        // Intel: i40iw (gen 1), irdma (gen 2, also every part perftest does not list).
        0x8086 if part == 14289 => Family::Fixed(48),
        0x8086 => Family::Fixed(101),
        0x209b if part == 0x1000 => Family::Generic,
        0x209b => Family::Unknown,
        // Yunsilicon: Diamond and Diamond Next, else Andes.
        0x1f67 if matches!(part, 0x1021 | 0x1023) => Family::Fixed(64),
        0x1f67 => Family::Fixed(32),
        // Nebula: DF200, Draco and RNIC400; else Leonis.
        0x1f0f if matches!(part, 0x1047 | 0x1226 | 0x1227 | 0x1610 | 0x3500..=0x350A) => {
            Family::ByQpType {
                ud: 434,
                other: 465,
            }
        }
        0x1f0f => Family::ByQpType { ud: 0, other: 32 },
        0x1dd8 => Family::Generic,
        // Every other vendor by the part id alone, as perftest does.
        _ if MELLANOX.contains(&part) || OTHERS_KNOWN.contains(&part) => Family::Generic,
        _ if NETXTREME.contains(&part) => Family::Fixed(96),
        _ if (61344..=61348).contains(&part) => Family::Fixed(32), // EFA
        _ if QLOGIC_E4.contains(&part) => Family::Fixed(128),
        _ if part == 4223 => Family::Fixed(96), // Alibaba eRDMA
        _ if HNS.contains(&part) => Family::Fixed(32),
        _ => Family::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Tool;
    use super::*;

    #[test]
    fn inline_defaults_follow_perftests_table() {
        let rc = QpType::Rc;
        // ConnectX-6 (Mellanox 0x02c9, part 4123): perftest's common latency defaults.
        assert_eq!(default_inline(0x02c9, 4123, Tool::WRITE_LAT, rc), 220);
        assert_eq!(default_inline(0x02c9, 4123, Tool::SEND_LAT, rc), 236);
        assert_eq!(
            default_inline(0x02c9, 4123, Tool::SEND_LAT, QpType::Ud),
            188
        );
        // Bandwidth tests, READs and atomics: none.
        assert_eq!(default_inline(0x02c9, 4123, Tool::WRITE_BW, rc), 0);
        assert_eq!(default_inline(0x02c9, 4123, Tool::READ_LAT, rc), 0);
        // Per vendor: bnxt_re, EFA, qedr, eRDMA, hns, i40iw, irdma.
        assert_eq!(default_inline(0x14e4, 5858, Tool::WRITE_LAT, rc), 96);
        assert_eq!(
            default_inline(0x1d0f, 61345, Tool::SEND_LAT, QpType::Ud),
            32
        );
        assert_eq!(default_inline(0x1077, 5700, Tool::WRITE_LAT, rc), 128);
        assert_eq!(default_inline(0x1ded, 4223, Tool::SEND_LAT, rc), 96);
        assert_eq!(default_inline(0x19e5, 41512, Tool::WRITE_LAT, rc), 32);
        assert_eq!(default_inline(0x8086, 14289, Tool::WRITE_LAT, rc), 48);
        assert_eq!(default_inline(0x8086, 0x1593, Tool::WRITE_LAT, rc), 101);
        assert_eq!(
            default_inline(0x1f0f, 0x3403, Tool::SEND_LAT, QpType::Ud),
            0
        );
        assert_eq!(
            default_inline(0x1f0f, 0x1610, Tool::SEND_LAT, QpType::Ud),
            434
        );
        // Devices perftest does not know: Soft-RoCE, siw, a Mellanox part it does not list.
        assert_eq!(default_inline(0xffffff, 0, Tool::WRITE_LAT, rc), 0);
        assert_eq!(default_inline(0x626d74, 1, Tool::SEND_LAT, rc), 0);
        assert_eq!(default_inline(0x02c9, 9999, Tool::WRITE_LAT, rc), 0);
        // Soft-RoCE (vendor 0xffffff) is not in the table; a ConnectX-6 is.
        assert!(!inline_recognized(0xffffff, 0));
        assert!(inline_recognized(0x02c9, 4123));
    }
}
