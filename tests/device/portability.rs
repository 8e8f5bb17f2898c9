//! What a build against a given rdma-core gets at run time: the libibverbs (and provider) it was
//! built against is the one loaded, the GID type reads the same through `ibv_query_gid_ex` as in
//! sysfs, and the parts its headers lacked are refused with one line. Runs in every device-test
//! boot: against the distribution's rdma-core, and again against rdma-core v55 built from source
//! (bench_scripts/test.sh, bench_scripts/rdma-core-build.sh).

use crate::common;

use std::path::{Path, PathBuf};

use rdma_bench::build_info;

/// Paths of the mapped shared objects whose file name contains `needle`, deduplicated.
fn mapped(needle: &str) -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let mut paths: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(PathBuf::from)
        .filter(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().contains(needle))
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Exactly one libibverbs is mapped, and its providers (a distribution's libibverbs loads every
/// provider its config dir lists) from one directory; with RDMA_CORE_LIB_DIR at build time all
/// of them come from there (the rpath build.rs sets, and that libibverbs' own config dir), not
/// from the system.
#[test]
fn the_libibverbs_built_against_is_the_one_loaded() {
    let port = common::port(); // opens the device: libibverbs has loaded its provider by now
    let verbs = mapped("libibverbs.so");
    let providers = mapped("-rdmav");
    println!(
        "device {}: libibverbs {verbs:?}, provider {providers:?}",
        port.context().name()
    );
    assert_eq!(verbs.len(), 1, "one libibverbs mapped: {verbs:?}");
    assert!(!providers.is_empty(), "no provider mapped");
    let dirs: Vec<_> = providers.iter().map(|p| p.parent()).collect();
    assert!(
        dirs.iter().all(|d| *d == dirs[0]),
        "providers from several directories: {providers:?}"
    );
    if !build_info::VERBS_LIB_DIR.is_empty() {
        let dir = canonical(Path::new(build_info::VERBS_LIB_DIR));
        assert!(
            canonical(&verbs[0]).starts_with(&dir),
            "{} is not from {}",
            verbs[0].display(),
            dir.display()
        );
        for p in &providers {
            assert!(
                canonical(p).starts_with(&dir),
                "provider {} is not from {}: this libibverbs read another config dir",
                p.display(),
                dir.display()
            );
        }
    }
}

/// `Context::gid_type` (ibv_query_gid_ex where built with it) names the testbed's RoCE v2 GID as
/// sysfs does.
#[test]
fn gid_type_agrees_with_sysfs() {
    let port = common::port();
    let (ctx, num, index) = (port.context(), port.num(), port.gid_index());
    let sysfs = ctx.gid_type_from_sysfs(num, index);
    assert!(sysfs.is_some(), "no sysfs GID type for {}", ctx.name());
    assert_eq!(ctx.gid_type(num, index), sysfs);
    if port.is_roce() && port.gid().ipv4().is_some() {
        assert_eq!(sysfs.as_deref(), Some("RoCE v2"));
    }
}

/// A build without the ibv_wr_* API refuses QPs for it with the one line that says why.
#[cfg(not(has_wr_api))]
#[test]
fn the_wr_api_is_refused_by_a_build_without_it() {
    let env = common::env();
    let cq = rdma_bench::verbs::CompletionQueue::new(env.port.context(), 16).expect("cq");
    let err = rdma_bench::verbs::QueuePair::new_ex(
        &env.pd,
        &env.port,
        &cq,
        &cq,
        rdma_bench::verbs::QpType::Rc,
        rdma_bench::verbs::QpCaps::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("without the ibv_wr_* post API"), "{err}");
}
