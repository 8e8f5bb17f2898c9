#!/usr/bin/env bash
# The project's test command: host-only tests on the host, then every device test on a real verbs
# device — the host's own, or Soft-RoCE through softroce.sh (test binaries are built here and run
# in the guest; compiling inside an emulated guest would take forever).
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD

echo "== lint (rustfmt, clippy -D warnings, the crate's [lints] table)"
cargo fmt --check
cargo clippy --all-targets --features device-tests -- -D warnings

echo "== lint without librdmacm (the build an install without RDMA CM gets: -R refused)"
RDMA_BENCH_NO_RDMACM=1 CARGO_TARGET_DIR=target/no-rdmacm cargo clippy --all-targets -- -D warnings

echo "== build"
cargo build --release --all-targets

echo "== host-only tests"
cargo test --release 2>&1

echo "== device tests (build)"
# test_bins PREFIX: the test executables whose target name starts with PREFIX.
test_bins() {
  cargo test --release --features device-tests --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"].startswith(sys.argv[1]):
        print(m["executable"])
' "$1"
}
mapfile -t bins < <(test_bins device_)
mapfile -t twonode < <(test_bins twonode_)
mapfile -t multinode < <(test_bins multinode_)
[ ${#bins[@]} -gt 0 ] && [ ${#twonode[@]} -gt 0 ] && [ ${#multinode[@]} -gt 0 ] || { echo "test.sh: the device test binaries were not built" >&2; exit 1; }

echo "== device tests (on ${SOFTROCE_VM:+forced }Soft-RoCE or the host's device)"
# Each binary prints libtest's own "test result:" line; any failure fails the run.
bench_scripts/softroce.sh run --timeout "${DEVICE_TEST_TIMEOUT:-900}" -- bash -c '
  rc=0
  echo "device: $RDMA_BENCH_DEVICE, GID index $RDMA_BENCH_GID_INDEX"
  for b in "$@"; do
    echo "-- $(basename "$b")"
    "$b" --test-threads=2 --color never || rc=1
  done
  exit $rc' device-tests "${bins[@]}"

# on_nodes N LABEL [softroce options] -- BINARIES: every binary on every node of an N-guest testbed.
on_nodes() {
  local nodes=$1 label=$2 opts=()
  shift 2
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  bench_scripts/softroce.sh run --nodes "$nodes" "${opts[@]}" --timeout "${DEVICE_TEST_TIMEOUT:-900}" -- bash -c '
    rc=0
    for b in "$@"; do
      echo "-- $(basename "$b") on node $SOFTROCE_NODE"
      "$b" --test-threads=1 --color never || rc=1
    done
    exit $rc' "$label" "$@"
}

echo "== two-node tests (two Soft-RoCE guests on one virtual Ethernet)"
on_nodes 2 twonode-tests -- "${twonode[@]}"

echo "== three-node tests (three Soft-RoCE guests on one virtual Ethernet, sshd in each)"
on_nodes 3 multinode-tests --sshd -- "${multinode[@]}"
echo "== all tests passed"
