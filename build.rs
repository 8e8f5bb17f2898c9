//! Generates bindings from the installed rdma-core (or MLNX_OFED) headers and compiles the C shim.
//!
//! Overrides for installs without pkg-config files: `RDMA_CORE_INCLUDE_DIR`, `RDMA_CORE_LIB_DIR`
//! (the latter, made absolute, is also the binaries' RUNPATH, so that they load the libraries they
//! were built against). What the headers offer is probed by compiling a few lines against them; each missing
//! piece turns a cfg off (one `cargo:warning` each), and env variables force them off for testing:
//!
//! | cfg                | needs                                           | off with                      |
//! |--------------------|-------------------------------------------------|-------------------------------|
//! | `has_wr_api`       | `ibv_wr_*`, `struct ibv_qp_ex` (rdma-core ≥ v24) | `RDMA_BENCH_NO_WR_API`        |
//! | `has_query_gid_ex` | `ibv_query_gid_ex` (rdma-core ≥ v32)            | `RDMA_BENCH_NO_QUERY_GID_EX`  |
//! | `has_rdmacm`       | librdmacm's `rdma/rdma_cma.h`                   | `RDMA_BENCH_NO_RDMACM`        |

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const INSTALL_HINT: &str = "install the verbs development files and libclang \
(Debian/Ubuntu: apt-get install libibverbs-dev libclang-dev pkg-config; \
RHEL/Fedora: dnf install rdma-core-devel clang-devel pkgconf), or point RDMA_CORE_INCLUDE_DIR and \
RDMA_CORE_LIB_DIR at a MLNX_OFED / rdma-core install";

fn fail(msg: &str) -> ! {
    eprintln!("error: rdma-bench: {msg}: {INSTALL_HINT}");
    std::process::exit(1);
}

/// Include directories of libibverbs, from the overrides or pkg-config.
fn find_verbs() -> Vec<PathBuf> {
    println!("cargo:rerun-if-env-changed=RDMA_CORE_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=RDMA_CORE_LIB_DIR");
    if let Ok(inc) = env::var("RDMA_CORE_INCLUDE_DIR") {
        if let Ok(lib) = env::var("RDMA_CORE_LIB_DIR") {
            // Absolute: a relative RUNPATH would be looked up from wherever the binary runs.
            let lib = std::fs::canonicalize(&lib).map_or(lib, |p| p.display().to_string());
            println!("cargo:rustc-link-search=native={lib}");
            // Run against the libraries we were built against, not whatever the loader finds
            // first (LD_LIBRARY_PATH still wins: this is a RUNPATH).
            println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
            println!("cargo:rustc-env=RDMA_BENCH_VERBS_LIB_DIR={lib}");
        } else {
            println!("cargo:rustc-env=RDMA_BENCH_VERBS_LIB_DIR=");
        }
        println!("cargo:rustc-link-lib=ibverbs");
        return vec![PathBuf::from(inc)];
    }
    println!("cargo:rustc-env=RDMA_BENCH_VERBS_LIB_DIR=");
    let mut includes = Vec::new();
    for lib in ["libibverbs"] {
        match pkg_config::Config::new().probe(lib) {
            Ok(found) => includes.extend(found.include_paths),
            Err(e) => fail(&format!("{lib} not found by pkg-config ({e})")),
        }
    }
    includes
}

/// librdmacm, when it is installed (its header next to the verbs headers, or pkg-config's
/// librdmacm): linked, and `has_rdmacm` set, so that `-R` works. Without it rdma-bench still
/// builds, and refuses `-R` with a line that says why.
fn find_rdmacm(includes: &[PathBuf]) -> bool {
    println!("cargo:rustc-check-cfg=cfg(has_rdmacm)");
    println!("cargo:rerun-if-env-changed=RDMA_BENCH_NO_RDMACM");
    if env::var_os("RDMA_BENCH_NO_RDMACM").is_some() {
        return false;
    }
    let found = if env::var("RDMA_CORE_INCLUDE_DIR").is_ok() {
        includes.iter().any(|i| i.join("rdma/rdma_cma.h").exists())
    } else {
        pkg_config::Config::new().probe("librdmacm").is_ok()
    };
    if found {
        if env::var("RDMA_CORE_INCLUDE_DIR").is_ok() {
            println!("cargo:rustc-link-lib=rdmacm");
        }
        println!("cargo:rustc-cfg=has_rdmacm");
    } else {
        println!(
            "cargo:warning=librdmacm not found: rdma-bench builds without RDMA CM (-R is refused); \
             install librdmacm-dev / rdma-core-devel to enable it"
        );
    }
    found
}

/// Whether `body` (C, after `#include <infiniband/verbs.h>`) compiles against the headers: the
/// compiler that builds the shim, syntax only, undeclared functions an error.
fn header_offers(out: &Path, includes: &[PathBuf], name: &str, body: &str) -> bool {
    let file = out.join(format!("probe_{name}.c"));
    let src = format!("#include <infiniband/verbs.h>\n{body}\n");
    if let Err(e) = std::fs::write(&file, src) {
        fail(&format!("cannot write {}: {e}", file.display()));
    }
    let mut cmd: Command = cc::Build::new()
        .cargo_metadata(false)
        .get_compiler()
        .to_command();
    cmd.arg("-fsyntax-only")
        .arg("-Werror=implicit-function-declaration")
        .arg("-Werror=incompatible-pointer-types");
    for inc in includes {
        cmd.arg(format!("-I{}", inc.display()));
    }
    cmd.arg(&file);
    match cmd.output() {
        Ok(o) => o.status.success(),
        Err(e) => fail(&format!(
            "cannot run the C compiler to probe the headers ({e})"
        )),
    }
}

/// One probed feature: its cfg name, the env variable that forces it off, the C it needs, what
/// the headers lack without it, and what is off then.
struct Probe {
    cfg: &'static str,
    off_env: &'static str,
    body: &'static str,
    missing: &'static str,
    off: &'static str,
}

const PROBES: [Probe; 2] = [
    Probe {
        cfg: "has_wr_api",
        off_env: "RDMA_BENCH_NO_WR_API",
        body: "int probe(struct ibv_context *c, struct ibv_qp_init_attr_ex *a) {\n\
               a->send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;\n\
               struct ibv_qp_ex *q = ibv_qp_to_qp_ex(ibv_create_qp_ex(c, a));\n\
               ibv_wr_start(q); ibv_wr_rdma_write(q, 0, 0); ibv_wr_set_sge(q, 0, 0, 0);\n\
               q->wr_flags = IBV_SEND_SIGNALED; return ibv_wr_complete(q); }",
        missing: "rdma-core headers lack ibv_wr_* (rdma-core < v24 / MLNX_OFED 4.x)",
        off: "--post-api wr and the other ibv_wr_* paths are off",
    },
    Probe {
        cfg: "has_query_gid_ex",
        off_env: "RDMA_BENCH_NO_QUERY_GID_EX",
        body: "int probe(struct ibv_context *c, struct ibv_gid_entry *e) {\n\
               return ibv_query_gid_ex(c, 1, 0, e, 0) + (e->gid_type == IBV_GID_TYPE_ROCE_V2); }",
        missing: "rdma-core headers lack ibv_query_gid_ex (rdma-core < v32)",
        off: "GID types are read from sysfs (gid_attrs/types) instead",
    },
];

/// Runs the probes; returns the `-D` defines for the shim and bindgen of those that passed.
fn probe_headers(out: &Path, includes: &[PathBuf]) -> Vec<String> {
    let mut defines = Vec::new();
    for p in &PROBES {
        println!("cargo:rustc-check-cfg=cfg({})", p.cfg);
        println!("cargo:rerun-if-env-changed={}", p.off_env);
        if env::var_os(p.off_env).is_some() {
            println!("cargo:warning={} is set: {}", p.off_env, p.off);
            continue;
        }
        if header_offers(out, includes, p.cfg, p.body) {
            println!("cargo:rustc-cfg={}", p.cfg);
            defines.push(format!(
                "RDMA_BENCH_{}",
                p.cfg["has_".len()..].to_uppercase()
            ));
        } else {
            println!("cargo:warning={}: {}", p.missing, p.off);
        }
    }
    defines
}

fn main() {
    let includes = find_verbs();
    let rdmacm = find_rdmacm(&includes);
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let defines = probe_headers(&out, &includes);
    let joined = env::join_paths(&includes).unwrap_or_default();
    println!(
        "cargo:rustc-env=RDMA_BENCH_VERBS_INCLUDE={}",
        joined.to_string_lossy()
    );

    for f in ["wrapper.h", "c_shim/shim.h", "c_shim/shim.c"] {
        println!("cargo:rerun-if-changed={f}");
    }

    let mut shim = cc::Build::new();
    shim.file("c_shim/shim.c").opt_level(2).warnings(true);
    for inc in &includes {
        shim.include(inc);
    }
    for d in &defines {
        shim.define(d, None);
    }
    shim.compile("rdma_bench_shim");

    if std::panic::catch_unwind(bindgen::clang_version).is_err() {
        fail("libclang could not be loaded");
    }
    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        .header("c_shim/shim.h")
        .allowlist_function("ibv_.*|shim_.*|rdma_.*")
        .allowlist_type("ibv_.*|rdma_.*")
        .allowlist_var("IBV_.*|RDMA_.*")
        .bitfield_enum("ibv_access_flags|ibv_send_flags|ibv_qp_attr_mask|ibv_wc_flags")
        .bitfield_enum("ibv_qp_create_send_ops_flags|ibv_qp_init_attr_mask|ibv_create_cq_wc_flags")
        .constified_enum_module(
            "ibv_wc_status|ibv_wc_opcode|ibv_wr_opcode|ibv_qp_type|ibv_qp_state",
        )
        .constified_enum_module("ibv_port_state|ibv_mtu|ibv_event_type")
        .constified_enum_module("rdma_cm_event_type|rdma_port_space")
        .prepend_enum_name(false)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(false)
        .generate_comments(false);
    for inc in &includes {
        builder = builder.clang_arg(format!("-I{}", inc.display()));
    }
    if rdmacm {
        builder = builder.clang_arg("-DRDMA_BENCH_RDMACM");
    }
    for d in &defines {
        builder = builder.clang_arg(format!("-D{d}"));
    }
    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => fail(&format!("bindgen could not parse the verbs headers ({e})")),
    };
    if let Err(e) = bindings.write_to_file(out.join("bindings.rs")) {
        fail(&format!("cannot write bindings to {}: {e}", out.display()));
    }
    write_imm_paths(&out);
}

/// Where the headers put `imm_data` in `ibv_send_wr` and `ibv_wc`: a member of an anonymous
/// union (rdma-core, which bindgen calls `__bindgen_anon_N`) or a plain field (older and
/// legacy MLNX_OFED headers). The accessors in `imm_paths.rs` name the path found, so that no
/// bindgen name of an anonymous type is written anywhere else.
fn write_imm_paths(out: &Path) {
    let text = std::fs::read_to_string(out.join("bindings.rs"))
        .unwrap_or_else(|e| fail(&format!("cannot read the generated bindings ({e})")));
    let send = imm_path(&text, "ibv_send_wr");
    let wc = imm_path(&text, "ibv_wc");
    let code = format!(
        "// Generated by build.rs from the bindings: where imm_data lives.\n\
         /// `imm_data` of a send WR (network order).\n\
         #[inline(always)]\n\
         pub(crate) unsafe fn send_wr_imm(wr: *mut ibv_send_wr) -> *mut u32 {{\n    \
         &raw mut (*wr).{send}\n}}\n\
         /// `imm_data` of a completion (network order; meaningful with IBV_WC_WITH_IMM).\n\
         #[inline(always)]\n\
         pub(crate) unsafe fn wc_imm(wc: &ibv_wc) -> u32 {{\n    \
         wc.{wc}\n}}\n"
    );
    if let Err(e) = std::fs::write(out.join("imm_paths.rs"), code) {
        fail(&format!(
            "cannot write imm_paths.rs to {}: {e}",
            out.display()
        ));
    }
}

/// The field path of `imm_data` in struct `name` of the bindings `text`.
fn imm_path(text: &str, name: &str) -> String {
    let fields = |kind: &str, ty: &str| -> Vec<(String, String)> {
        let head = format!("pub {kind} {ty} {{");
        let Some(at) = text.find(&head) else {
            return Vec::new();
        };
        text[at + head.len()..]
            .lines()
            .take_while(|l| l.trim() != "}")
            .filter_map(|l| {
                let (f, t) = l.trim().strip_prefix("pub ")?.split_once(": ")?;
                Some((f.to_string(), t.trim_end_matches(',').to_string()))
            })
            .collect()
    };
    for (field, ty) in fields("struct", name) {
        if field == "imm_data" {
            return field;
        }
        if field.starts_with("__bindgen_anon_")
            && fields("union", &ty).iter().any(|(f, _)| f == "imm_data")
        {
            return format!("{field}.imm_data");
        }
    }
    fail(&format!(
        "the verbs headers' struct {name} has no imm_data this build knows how to reach"
    ))
}
