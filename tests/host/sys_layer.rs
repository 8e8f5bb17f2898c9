//! The raw bindings stay behind `src/sys.rs`: no code above it names a type or field that bindgen
//! made up for an anonymous struct or union (`__bindgen_anon_N`, `…__bindgen_ty_N`). Their
//! numbering follows the order of anonymous members in the headers, which differs between
//! rdma-core versions and MLNX_OFED releases, so one such name elsewhere can stop the crate from
//! building on a header layout it was never tried on.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_bindgen_name_of_an_anonymous_type_outside_sys() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sys = root.join("src/sys.rs");
    let mut files = Vec::new();
    for dir in ["src", "tests", "examples", "benches"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    // This file names them, to look for them.
    let this = root.join("tests/host/sys_layer.rs");
    assert!(
        files.contains(&sys),
        "src/sys.rs not found under {}",
        root.display()
    );
    assert!(files.len() > 50, "only {} Rust files found", files.len());
    let mut found = Vec::new();
    for f in files.iter().filter(|f| **f != sys && **f != this) {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("__bindgen_anon_") || line.contains("__bindgen_ty_") {
                found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "bindgen names of anonymous types outside src/sys.rs (wrap them there):\n{}",
        found.join("\n")
    );
}
