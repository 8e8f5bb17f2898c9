//! The host: locked memory, hugepages, CPU frequency governor, SMT.

use std::path::Path;

use super::{finding, read_trim, Finding, Verdict};
use crate::mem;

/// The host: locked memory, hugepages, CPU frequency governor, SMT; sysfs read under `sys`.
pub(super) fn host(sys: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    let lock_cap = has_ipc_lock();
    match mem::memlock_limit() {
        None => out.push(finding(Verdict::Ok, "memlock", "unlimited".into(), None)),
        Some(_) if lock_cap => out.push(finding(
            Verdict::Ok,
            "memlock",
            "CAP_IPC_LOCK: memory registration is not limited by it".into(),
            None,
        )),
        Some(l) => {
            let fix = Some("raise it: `ulimit -l unlimited` in the shell, or `* - memlock unlimited` in /etc/security/limits.conf (containers: --ulimit memlock=-1 or CAP_IPC_LOCK)".to_string());
            let kib = l >> 10;
            if l < 1 << 20 {
                out.push(finding(
                    Verdict::Fail,
                    "memlock",
                    format!(
                        "{kib} KiB: queues and buffers of even the smallest run will not register"
                    ),
                    fix,
                ));
            } else if l < 1 << 30 {
                out.push(finding(Verdict::Warn, "memlock", format!("{} MiB: small runs register; larger buffers will not (HERD's 16 MiB request region, atomics-sequencer's 1 GiB)", l >> 20), fix));
            } else {
                out.push(finding(
                    Verdict::Ok,
                    "memlock",
                    format!("{} MiB", l >> 20),
                    None,
                ));
            }
        }
    }
    out.push(hugepages(sys, mem::hugepages_free));
    out.extend(cpu(sys));
    out
}

/// Free 2 MiB hugepages per NUMA node (`total_free` when sysfs has no nodes).
pub(super) fn hugepages(sys: &Path, total_free: fn() -> u64) -> Finding {
    let nodes = mem::hugepages_by_node_in(sys);
    let free: u64 = if nodes.is_empty() {
        total_free()
    } else {
        nodes.iter().map(|n| n.2).sum()
    };
    let per_node: Vec<String> = nodes
        .iter()
        .map(|(n, nr, fr)| format!("node {n}: {fr} of {nr} free"))
        .collect();
    let detail = if per_node.is_empty() {
        String::new()
    } else {
        format!(" ({})", per_node.join(", "))
    };
    if free == 0 {
        finding(
            Verdict::Warn,
            "hugepages",
            format!("no free 2 MiB hugepages{detail}: buffers fall back to ordinary pages (--hugepages auto) or fail (--hugepages require)"),
            Some("reserve some: `echo 1024 > /proc/sys/vm/nr_hugepages` (2 GiB; per node: /sys/devices/system/node/nodeN/hugepages/hugepages-2048kB/nr_hugepages)".into()),
        )
    } else {
        finding(
            Verdict::Ok,
            "hugepages",
            format!("{free} free{detail}"),
            None,
        )
    }
}

/// The CPU frequency governors in use, and SMT.
pub(super) fn cpu(sys: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    let cpus = sys.join("devices/system/cpu");
    let mut governors: Vec<String> = std::fs::read_dir(&cpus)
        .map(|d| {
            d.filter_map(|e| {
                let e = e.ok()?;
                let name = e.file_name();
                let cpu = name.to_str()?.strip_prefix("cpu")?;
                cpu.parse::<u32>().ok()?;
                read_trim(&format!("{}/cpufreq/scaling_governor", e.path().display()))
            })
            .collect()
        })
        .unwrap_or_default();
    governors.sort();
    governors.dedup();
    out.push(match governors.as_slice() {
        [] => finding(Verdict::Ok, "cpu governor", "no cpufreq (fixed frequency or a VM)".into(), None),
        [g] if g == "performance" => finding(Verdict::Ok, "cpu governor", "performance".into(), None),
        gs => finding(
            Verdict::Warn,
            "cpu governor",
            format!("{}: clock changes move the numbers between runs", gs.join(", ")),
            Some("`cpupower frequency-set -g performance` (or write performance to /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)".into()),
        ),
    });
    match read_trim(&format!("{}/smt/active", cpus.display())).as_deref() {
        Some("1") => out.push(finding(
            Verdict::Warn,
            "smt",
            "on: two benchmark threads may share a physical core".into(),
            Some("pin threads to distinct cores (numactl/taskset; see /sys/devices/system/cpu/cpu*/topology/thread_siblings_list) or turn SMT off (`echo off > /sys/devices/system/cpu/smt/control`)".into()),
        )),
        Some("0") => out.push(finding(Verdict::Ok, "smt", "off".into(), None)),
        _ => {}
    }
    out
}

/// Whether this process holds CAP_IPC_LOCK (bit 14 of its effective capabilities), which
/// exempts registration from the memlock limit (uid 0 alone does not: a container's root may
/// lack it).
fn has_ipc_lock() -> bool {
    read_trim("/proc/self/status")
        .and_then(|s| {
            let hex = s
                .lines()
                .find(|l| l.starts_with("CapEff:"))?
                .split_whitespace()
                .nth(1)?;
            u64::from_str_radix(hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << 14) != 0)
}
