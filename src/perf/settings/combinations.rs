//! The flag combinations perftest refuses (with its messages), and those we refuse where it
//! would silently ignore a flag or hang: checked before anything else is resolved.

use super::super::args::PerfArgs;
use super::super::{Test, Tool, Verb};
use super::refuse;
use crate::error::Result;

/// Refuses `a` for `tool` when its flags cannot go together.
pub(super) fn refuse_combinations(tool: Tool, a: &PerfArgs) -> Result<()> {
    let bw = tool.test == Test::Bw;
    let verb = tool.verb;
    if a.qps.is_some_and(|q| q != 1) && !bw {
        return Err(refuse("Multiple QPs only available on bw tests"));
    }
    if a.inline_size.is_some() && matches!(verb, Verb::Read | Verb::Atomic) {
        return Err(refuse("Inline feature not available on READ/Atomic verbs"));
    }
    if a.outs.is_some() && !matches!(verb, Verb::Read | Verb::Atomic) {
        return Err(refuse(
            "Setting Outstanding reads only available on READ verb",
        ));
    }
    if a.rx_depth.is_some_and(|r| r > 1) && verb != Verb::Send {
        return Err(refuse("On RDMA verbs rx depth can be only 1"));
    }
    if a.atomic_type.is_some() && verb != Verb::Atomic {
        return Err(refuse(
            "-A/--atomic_type changes the atomic of the atomic tests only",
        ));
    }
    if a.no_peak && !bw {
        return Err(refuse("NoPeak only valid for BW tests"));
    }
    if (a.report_unsorted || a.report_cycles || a.report_histogram) && bw {
        return Err(refuse("-U, -C and -H are available only on latency tests"));
    }
    if a.bidirectional && !bw {
        return Err(refuse("Bidirectional is only available in BW test"));
    }
    if a.use_srq && verb != Verb::Send {
        return Err(refuse("Using SRQ only avavilible in SEND tests."));
    }
    if a.mcg {
        if verb != Verb::Send {
            return Err(refuse("MultiCast feature only available on SEND verb"));
        }
        if a.bidirectional {
            return Err(refuse("Bidirectional mode not supported in multicast"));
        }
        if a.qps.is_some_and(|q| q > 1) {
            return Err(refuse("Only 1 QP supported in multicast"));
        }
        if a.rdma_cm {
            return Err(refuse(
                "Perftest still doesn't support Multicast with rdma_cm",
            ));
        }
    } else if a.mgid.is_some() {
        return Err(refuse("-M/--MGID names the group of -g: add -g"));
    }
    if a.mr_per_qp && !bw {
        return Err(refuse("--mr_per_qp is only available in BW tests"));
    }
    if a.reversed {
        if !bw {
            return Err(refuse("--reversed is only available in BW tests"));
        }
        // perftest's RDMA CM connect follows the reversed roles (its server would dial out with
        // no address): it cannot run this, and neither side could meet the other.
        if a.rdma_cm || a.comm_rdma_cm {
            return Err(refuse(
                "--reversed cannot go with -R or -z: RDMA CM's roles would be reversed too",
            ));
        }
    }
    if a.report_both && !a.bidirectional {
        return Err(refuse("--report-both prints each side of a -b run: add -b"));
    }
    if a.run_infinitely {
        if !bw {
            return Err(refuse("run_infinitely exists only in BW tests for now."));
        }
        if verb == Verb::Send && a.bidirectional {
            return Err(refuse(
                "run_infinitely mode is not supported in SEND Bidirectional BW test",
            ));
        }
        if a.iters.is_some() || a.all {
            return Err(refuse(
                "--run_infinitely runs until stopped: drop -n and -a",
            ));
        }
    }
    if (a.events || a.vector.is_some()) && verb == Verb::Write {
        return Err(refuse("Events feature not available on WRITE verb"));
    }
    if a.vector.is_some() && !a.events {
        return Err(refuse(
            "Events must be enabled to select a completion vector",
        ));
    }
    if a.events && a.duration.is_some() {
        return Err(refuse("Duration mode doesn't work with events."));
    }
    if a.events && a.run_infinitely {
        return Err(refuse(
            "run_infinitely does not support events feature yet.",
        ));
    }
    if a.ib_port == 0 {
        return Err(refuse("IB Port can't be less than 1"));
    }
    if verb == Verb::Atomic && (a.all || a.size.is_some_and(|s| s != 8)) {
        return Err(refuse("Message size cannot be changed for Atomic tests"));
    }
    if a.all && a.size.is_some() {
        return Err(refuse(
            "-a runs every size from 2 B to 8 MiB: drop -s (perftest ignores it silently)",
        ));
    }
    if a.duration.is_some() && a.iters.is_some() {
        return Err(refuse(
            "-D runs for a time, -n for a count: give one (perftest ignores -n silently)",
        ));
    }
    if a.duration.is_some() && a.all {
        return Err(refuse(
            "Duration mode currently doesn't support running on all sizes",
        ));
    }
    if a.margin.is_some() && a.duration.is_none() {
        return Err(refuse("-f/--margin applies to -D runs only"));
    }
    if a.latency_gap.is_some_and(|g| g > 0) && bw {
        return Err(refuse("Latency gap feature is only for latency tests"));
    }
    if (a.limit_bw.is_some() || a.limit_msgrate.is_some()) && !bw {
        return Err(refuse(
            "-w/--limit_bw and -y/--limit_msgrate check BW results: BW tests only",
        ));
    }
    if a.odp && verb == Verb::Atomic {
        return Err(refuse("ODP does not support ATOMICS for now"));
    }
    if a.odp && a.connection == "UC" {
        return Err(refuse("ODP does not support UC"));
    }
    if a.mmap_offset.is_some() && a.mmap.is_none() {
        return Err(refuse(
            "--mmap-offset places the --mmap file's mapping: add --mmap FILE",
        ));
    }
    Ok(())
}
