//! The sysfs parsers against copies of sysfs trees (tests/data/sysfs/: the kernel's file layout
//! and formats; `vm/` copied from a qemu guest's /sys, `degraded/` and `tuned/` laid out as a
//! two-socket host with a PCIe RDMA NIC).

use std::path::{Path, PathBuf};

use super::device::pcie;
use super::host::{cpu, hugepages};
use super::{Finding, Verdict};

fn tree(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/sysfs")
        .join(name)
}

fn nic(name: &str) -> String {
    tree(name)
        .join("class/infiniband/mlx5_0/device")
        .display()
        .to_string()
}

fn lines(found: &[Finding]) -> Vec<(Verdict, String)> {
    found
        .iter()
        .map(|f| (f.verdict, format!("{}: {}", f.subject, f.text)))
        .collect()
}

fn no_meminfo() -> u64 {
    panic!("the per-node counts must be used when sysfs has nodes")
}

#[test]
fn a_link_below_capability_warns_and_names_the_numa_node() {
    let found = pcie("device mlx5_0", &nic("degraded"));
    assert_eq!(
        lines(&found),
        [
            (Verdict::Warn, "device mlx5_0: PCIe 8.0 GT/s x8 (device capable of 16.0 GT/s x16)".into()),
            (Verdict::Ok, "device mlx5_0: on NUMA node 1: run benchmarks there (`--numa-node 1`, or numactl --cpunodebind=1 --membind=1)".into()),
        ]
    );
    assert!(found[0]
        .fix
        .as_deref()
        .is_some_and(|f| f.contains("reseat")));
}

#[test]
fn a_full_link_is_ok() {
    let found = pcie("device mlx5_0", &nic("tuned"));
    assert_eq!(found[0].verdict, Verdict::Ok);
    assert_eq!(
        found[0].text,
        "PCIe 16.0 GT/s x16 (device capable of 16.0 GT/s x16)"
    );
    assert!(found[0].fix.is_none());
}

#[test]
fn mixed_governors_and_smt_warn() {
    let found = cpu(&tree("degraded"));
    assert_eq!(
        lines(&found),
        [
            (
                Verdict::Warn,
                "cpu governor: performance, powersave: clock changes move the numbers between runs"
                    .into()
            ),
            (
                Verdict::Warn,
                "smt: on: two benchmark threads may share a physical core".into()
            ),
        ]
    );
    let found = cpu(&tree("tuned"));
    assert_eq!(
        lines(&found),
        [
            (Verdict::Ok, "cpu governor: performance".into()),
            (Verdict::Ok, "smt: off".into()),
        ]
    );
}

#[test]
fn a_vm_without_cpufreq_is_fine() {
    let found = cpu(&tree("vm"));
    assert_eq!(found[0].verdict, Verdict::Ok);
    assert_eq!(found[0].text, "no cpufreq (fixed frequency or a VM)");
}

#[test]
fn hugepages_are_counted_per_node() {
    let f = hugepages(&tree("degraded"), no_meminfo);
    assert_eq!(
        (f.verdict, f.text.as_str()),
        (
            Verdict::Ok,
            "512 free (node 0: 0 of 0 free, node 1: 512 of 1024 free)"
        )
    );
    let f = hugepages(&tree("vm"), no_meminfo);
    assert_eq!(f.verdict, Verdict::Warn);
    assert!(
        f.text
            .starts_with("no free 2 MiB hugepages (node 0: 0 of 0 free)"),
        "{}",
        f.text
    );
    assert!(f.fix.as_deref().is_some_and(|x| x.contains("nr_hugepages")));
}
