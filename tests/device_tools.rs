//! rdma-bench's tools on a real device (Soft-RoCE in the testbed).

use std::process::Command;

/// The testbed's device, its ACTIVE port and the GID index the testbed chose: doctor must find
/// them all, pick the same GID, flag the software device, and fail nothing.
#[test]
fn doctor_sees_the_testbed_device_as_the_benchmarks_do() {
    let dev = std::env::var("RDMA_BENCH_DEVICE")
        .expect("RDMA_BENCH_DEVICE is not set: device tests run through bench_scripts/test.sh");
    let out = Command::new(env!("CARGO_BIN_EXE_rdma-bench"))
        .args(["doctor", "--device", &dev])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "doctor failed on {dev}:\n{text}");
    assert!(
        text.contains(&format!("[ok  ] port {dev}:1: ACTIVE (LinkUp), ")),
        "{text}"
    );
    if let Ok(gid) = std::env::var("RDMA_BENCH_GID_INDEX") {
        assert!(
            text.contains(&format!("our tools use index {gid} (RoCE v2, IPv4)")),
            "{text}"
        );
    }
    if dev.starts_with("rxe") {
        assert!(
            text.contains(&format!("[warn] device {dev}: a software RDMA device")),
            "{text}"
        );
    }
    assert!(
        text.lines()
            .last()
            .unwrap_or("")
            .starts_with("doctor: 0 fail, "),
        "{text}"
    );
}
