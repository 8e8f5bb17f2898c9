//! `bench_scripts/vs-original.sh --store SRC_DIR`'s refusals, without an original checkout (CI has
//! none): a SRC_DIR without the original's mica/ and libhrd/ and bad settings are refused in one
//! line with exit 2 before anything is copied or built, `--help` explains the mode, and
//! bench_scripts/original-store.patch stays a documented change of mica/test.c alone. The run
//! itself (build, alternated pairs, callgrind, table) needs the user's checkout.

use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/vs-original.sh")
}

fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(script())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("vs-original.sh runs");
    crate::common::output_of(out)
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the previous run's dir");
    }
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn a_directory_without_the_originals_store_is_refused_in_one_line() {
    let (code, out, err) = run(&["--store"], &[]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (
            2,
            "",
            "vs-original.sh: --store takes one argument, SRC_DIR (see --help)\n"
        )
    );

    let dir = fresh_dir("vs-store-not-a-checkout");
    let d = dir.to_str().expect("utf-8 path");
    let (code, out, err) = run(&["--store", d], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "vs-original.sh: SRC_DIR must be a checkout of https://github.com/efficient/rdma_bench (its mica/ and libhrd/)"
        ),
        "{err}"
    );
    assert!(err.trim_end().ends_with("has no mica/test.c"), "{err}");

    // The CMake tree the device mode needs is not enough: the store mode names what is missing.
    std::fs::create_dir_all(dir.join("mica")).expect("dir");
    std::fs::write(dir.join("mica/test.c"), "").expect("write");
    let (code, _, err) = run(&["--store", d], &[]);
    assert_eq!(code, 2);
    assert!(err.trim_end().ends_with("has no mica/mica.c"), "{err}");
}

#[test]
fn bad_settings_are_refused_before_anything_is_built() {
    let dir = fresh_dir("vs-store-layout");
    for f in ["mica", "libhrd"] {
        std::fs::create_dir_all(dir.join(f)).expect("dirs");
    }
    for f in [
        "mica/test.c",
        "mica/mica.c",
        "mica/mica.h",
        "mica/city.c",
        "mica/Makefile",
        "libhrd/hrd.h",
        "libhrd/hrd_util.c",
        "libhrd/hrd_conn.c",
    ] {
        std::fs::write(dir.join(f), "").expect("write");
    }
    let d = dir.to_str().expect("utf-8 path");
    for (var, value, msg) in [
        ("REPS", "two", "REPS must be a whole number >= 1"),
        (
            "PASSES",
            "2",
            "PASSES must be a whole number >= 3 (insert, get, update)",
        ),
        (
            "CG_SCALE",
            "3",
            "CG_SCALE must be a power of two from 1 to 512",
        ),
        (
            "STORE_CPU",
            "100000",
            "STORE_CPU must be a CPU number below ",
        ),
    ] {
        let (code, out, err) = run(&["--store", d], &[(var, value)]);
        assert_eq!(code, 2, "{var}={value}: {err}");
        assert!(out.is_empty(), "{var}={value}: {out}");
        assert_eq!(err.lines().count(), 1, "{var}={value}: {err}");
        assert!(
            err.starts_with(&format!("vs-original.sh: {msg}")),
            "{var}={value}: {err}"
        );
    }
}

#[test]
fn help_explains_the_store_mode() {
    let (code, out, _) = run(&["--help"], &[]);
    assert_eq!(code, 0);
    for word in [
        "--store SRC_DIR",
        "original-store.patch",
        "kv-bench",
        "STORE_CPU",
        "CG_SCALE",
        "PASSES",
        "taskset",
        "callgrind",
        "nr_hugepages",
    ] {
        assert!(out.contains(word), "--help mentions {word}: {out}");
    }
}

#[test]
fn the_store_patch_is_documented_and_changes_test_c_alone() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/original-store.patch");
    let text = std::fs::read_to_string(p).expect("the patch is there");
    let first_diff = text
        .find("\ndiff ")
        .expect("a unified diff follows the header");
    let header = &text[..first_diff];
    for topic in [
        "TEST_NUM_KEYS",
        "TEST_PASSES",
        "TEST_MIX_PUT_PCT",
        "TEST_HERD_THETA",
        "timed_pass",
        "callgrind",
        "COPY",
    ] {
        assert!(header.contains(topic), "the header explains {topic}");
    }
    let files: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("+++ "))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .map(|l| l.split_once('/').map_or(l, |(_, rest)| rest))
        .collect();
    assert_eq!(files, ["mica/test.c"]);
    // The MICA call and the response checks of the loop are the original's.
    for kept in [
        " mica_batch_op(kv, TEST_BATCH_SIZE, op_ptr_arr, resp_arr);",
        " assert(resp_arr[j].type == MICA_RESP_PUT_SUCCESS);",
        " sum += resp_arr[j].val_ptr[k];",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with('+') && l.contains(kept.trim())),
            "the timed loop keeps `{}`",
            kept.trim()
        );
    }
}

/// The original's sizes stay compile-time constants in the patched test.c (its loops sized and
/// unrolled as the original's are): each is a define under #ifndef that a build sets with -D,
/// none is read from the environment, and the batch's arrays are sized by the batch again.
#[test]
fn the_store_patch_keeps_the_originals_sizes_compile_time() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/original-store.patch");
    let text = std::fs::read_to_string(p).expect("the patch is there");
    let after: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('-') && (l.starts_with('+') || l.starts_with(' ')))
        .map(|l| &l[1..])
        .collect();
    for size in [
        "TEST_BATCH_SIZE",
        "TEST_NUM_BKTS",
        "TEST_LOG_CAP",
        "TEST_NUM_KEYS",
    ] {
        let guard = format!("#ifndef {size}");
        let at = after
            .iter()
            .position(|l| *l == guard)
            .unwrap_or_else(|| panic!("the patched test.c has `{guard}`"));
        assert!(
            after[at + 1].starts_with(&format!("#define {size} ")),
            "`{guard}` guards the original's define, not `{}`",
            after[at + 1]
        );
        assert!(
            !after.iter().any(|l| l.contains(&format!("\"{size}\""))),
            "{size} is not read from the environment"
        );
        assert!(
            !after.iter().any(|l| l.contains(&format!("int {size}"))),
            "{size} is not a variable"
        );
    }
    assert!(after.contains(&"  struct mica_op* op_ptr_arr[TEST_BATCH_SIZE];"));
}
