//! Generates bindings from the installed rdma-core (or MLNX_OFED) headers and compiles the C shim.
//!
//! Overrides for installs without pkg-config files: `RDMA_CORE_INCLUDE_DIR`, `RDMA_CORE_LIB_DIR`.

use std::env;
use std::path::PathBuf;

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
            println!("cargo:rustc-link-search=native={lib}");
        }
        println!("cargo:rustc-link-lib=ibverbs");
        return vec![PathBuf::from(inc)];
    }
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

fn main() {
    let includes = find_verbs();
    let rdmacm = find_rdmacm(&includes);
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    for f in ["wrapper.h", "c_shim/shim.h", "c_shim/shim.c"] {
        println!("cargo:rerun-if-changed={f}");
    }

    let mut shim = cc::Build::new();
    shim.file("c_shim/shim.c").opt_level(2).warnings(true);
    for inc in &includes {
        shim.include(inc);
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
    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => fail(&format!("bindgen could not parse the verbs headers ({e})")),
    };
    if let Err(e) = bindings.write_to_file(out.join("bindings.rs")) {
        fail(&format!("cannot write bindings to {}: {e}", out.display()));
    }
}
