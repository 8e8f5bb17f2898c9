//! `bench_scripts/herd/worker-instr.sh`'s refusals, on the host: bad request counts and an
//! INSTR_BIN without a built herd are refused in one line with exit 2, before anything is built
//! or any testbed boots. The count itself needs a device (the testbed: docs/results.md).

use std::path::PathBuf;
use std::process::Command;

fn run(env: &[(&str, &str)]) -> (i32, String, String) {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench_scripts/herd/worker-instr.sh");
    let out = Command::new(script)
        .envs(env.iter().copied())
        .output()
        .expect("worker-instr.sh runs");
    crate::common::output_of(out)
}

#[test]
fn bad_request_counts_and_a_missing_build_are_refused_in_one_line() {
    let counts = "worker-instr.sh: INSTR_N1 and INSTR_N2 must be whole numbers with 1 <= INSTR_N1 < INSTR_N2\n";
    for (n1, n2) in [("30000", "10000"), ("0", "10"), ("ten", "20"), ("5", "5")] {
        let (code, out, err) = run(&[("INSTR_N1", n1), ("INSTR_N2", n2)]);
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (2, "", counts),
            "{n1} {n2}"
        );
    }
    let dir = env!("CARGO_TARGET_TMPDIR");
    let (code, out, err) = run(&[("INSTR_BIN", dir)]);
    assert_eq!(
        (code, out.as_str(), err),
        (
            2,
            "",
            format!(
                "worker-instr.sh: {dir}/herd not found (INSTR_BIN names directories that hold a built herd)\n"
            )
        )
    );
}
