//! What this build of rdma-bench was compiled against: which optional parts of rdma-core its
//! headers offered (build.rs probes them, see docs/portability.md) and where they came from.
//! For reports such as `rdma-bench doctor`; nothing here touches a device.

/// The extended post API (`ibv_wr_start … ibv_wr_complete`, `struct ibv_qp_ex`; rdma-core ≥ v24).
/// Off: `--post-api wr` and [`crate::verbs::QueuePair::new_ex`] are refused.
pub const WR_API: bool = cfg!(has_wr_api);

/// `ibv_query_gid_ex` (rdma-core ≥ v32). Off: GID types come from sysfs (`gid_attrs/types/N`).
pub const QUERY_GID_EX: bool = cfg!(has_query_gid_ex);

/// librdmacm (RDMA CM). Off: `-R` (connect through the CM) is refused.
pub const RDMACM: bool = cfg!(has_rdmacm);

/// The verbs include directories the bindings were generated from (`:`-separated; empty when
/// pkg-config found them in the compiler's default path).
pub const VERBS_INCLUDE: &str = env!("RDMA_BENCH_VERBS_INCLUDE");

/// `RDMA_CORE_LIB_DIR` at build time (also the binaries' rpath), or empty for the system's
/// libraries.
pub const VERBS_LIB_DIR: &str = env!("RDMA_BENCH_VERBS_LIB_DIR");

/// Each optional part: its name, whether it is compiled in, and what is off without it.
pub const FEATURES: [(&str, bool, &str); 3] = [
    ("ibv_wr_* post API", WR_API, "--post-api wr"),
    (
        "ibv_query_gid_ex",
        QUERY_GID_EX,
        "GID types come from sysfs instead",
    ),
    ("librdmacm", RDMACM, "-R (RDMA CM connection setup)"),
];

/// The one line a run-time request for the `ibv_wr_*` path gets from a build without it.
pub(crate) const NO_WR_API: &str = "this rdma-bench was built against rdma-core headers without \
the ibv_wr_* post API (rdma-core < v24 / MLNX_OFED 4.x): --post-api wr is not available; use \
--post-api classic, or rebuild against rdma-core >= v24";
