#!/usr/bin/env bash
# The project's test command: host-only tests on the host, then every device test on a real verbs
# device — the host's own, or Soft-RoCE through softroce.sh (test binaries are built here and run
# in the guest; compiling inside an emulated guest would take forever). Portability: a compile-only
# build against headers without ibv_wr_*, and a subset of the device tests built against rdma-core
# v55 from source (bench_scripts/rdma-core-build.sh), run in the same boot as the others.
#
#   test.sh           everything (what CI runs)
#   test.sh --quick   formatting, one clippy configuration, the host tests and the core device
#                     tests in one boot: "did I break something", in minutes on a warm build tree
#
# Each step's seconds and the total are printed as a table at the end, also when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD

quick=0
case ${1:-} in
  "") ;;
  --quick) quick=1 ;;
  -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown option '$1' (use --quick, or no option for every test)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "test.sh: one option at most (got: $*)" >&2; exit 2; }

# step NAME: ends the step that runs (its seconds into the table) and starts NAME.
step_names=() step_secs=() step_name= step_start=$SECONDS run_start=$SECONDS
step() {
  [ -z "$step_name" ] || { step_names+=("$step_name"); step_secs+=($((SECONDS - step_start))); }
  step_name=$1 step_start=$SECONDS
  [ -z "$step_name" ] || echo "== [$(date +%T)] $step_name"
}
# The table, at exit whatever the outcome: a step that failed is the last row.
timing_table() {
  local rc=$? i failed=
  # A step that failed while the registry's tests ran beside it: they are not left behind.
  [ -z "${registry_pid:-}" ] || kill "$registry_pid" 2>/dev/null || true
  [ -z "$step_name" ] || [ $rc = 0 ] || failed=" (failed in the last step, exit $rc)"
  step ""
  echo "== steps ($([ $quick = 1 ] && echo quick || echo full) run)"
  for i in "${!step_names[@]}"; do
    printf '%6d s  %s\n' "${step_secs[$i]}" "${step_names[$i]%% (*}"
  done
  printf '%6d s  total%s\n' $((SECONDS - run_start)) "$failed"
}
trap timing_table EXIT

step "lint (rustfmt, clippy -D warnings, the crate's [lints] table)"
cargo fmt --check
cargo clippy --all-targets --features device-tests -- -D warnings

# The test binaries: tests/host (every host-only test) and tests/device (every device test, a
# module per subject; tests/device/main.rs says which boot runs which modules).
# The quick lane's device tests, as libtest filters of the device binary: WRITE, READ, SEND and UD
# through the verbs layer, one paper benchmark with both roles (WRITE then READ, --verify), one
# perftest tool against Debian's perftest both ways. One boot, one process.
QUICK_DEVICE=(verbs::rc_write_inline_and_from_mr verbs::rc_read verbs::rc_send_recv_and_send_with_imm
  verbs::ud_send_lands_after_the_grh bench::rw_tput_sender_write_two_threads_then_read
  perf::bw_tools_against_perftest_both_ways --exact)
# The device binary's tests for the single-guest boot: all but the modules of the other boots.
ONE_GUEST_SKIP=(--skip fabric:: --skip twonode:: --skip ipv6only:: --skip multinode::)

if [ $quick = 0 ]; then
  # Every target but the library's unit tests: they need no optimization, and at opt-level 3
  # they are a second compile of the whole crate, ~40 s of a clean build. The v55 build below
  # compiles them in the debug profile beside its device binary.
  step "build (profile ci: release without fat LTO; every target but the unit tests, built once)"
  targets=(--lib --bins --examples --test host --test device)
  cargo build --profile ci --features device-tests "${targets[@]}"
  targets=(--test host --test device)
else
  # The library, its unit tests, the binaries and the two test binaries (no examples).
  step "build (profile ci: the library, the binaries, the host and device test binaries)"
  targets=(--lib --bins --test host --test device)
  cargo test --profile ci --features device-tests --no-run "${targets[@]}"
fi
# built_tests CARGO_TEST_ARGS...: the test executables that `cargo test --no-run ARGS` builds, one
# "KIND NAME PATH" line each (KIND lib: the unit tests; test: a tests/ target; bin). Cargo's own
# diagnostics go to stderr.
built_tests() {
  cargo test --no-run --message-format=json "$@" |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(t["kind"][0], t["name"], m["executable"])
'
}
# pick KIND NAME: the path of that executable in $built.
pick() { awk -v k="$1" -v n="$2" '$1 == k && $2 == n { print $3 }' <<<"$built"; }
built=$(built_tests --profile ci --features device-tests "${targets[@]}" 2>target/test-bins.log) ||
  { cat target/test-bins.log >&2; echo "test.sh: cargo could not list the test binaries" >&2; exit 1; }
host_bin=$(pick test host) device_bin=$(pick test device) unit_bin=$(pick lib rdma_bench)
[ -n "$host_bin" ] && [ -n "$device_bin" ] && { [ $quick = 0 ] || [ -n "$unit_bin" ]; } ||
  { echo "test.sh: the unit, host and device test binaries were not all built" >&2; exit 1; }

step "host-only tests (the host test binary, doc tests; in the quick lane the unit tests too)"
# The registry's tests spend their 40 s waiting out their own timeouts: they run in a process
# beside the others and, in the full run, beside the two builds that follow them; their output
# is printed after theirs.
"$host_bin" registry:: --color never >target/registry-tests.log 2>&1 &
registry_pid=$!
host_rc=0
if [ $quick = 1 ]; then
  echo "-- unit tests"
  "$unit_bin" --color never || host_rc=1
fi
echo "-- host (all but registry::)"
"$host_bin" --skip registry:: --color never || host_rc=1
cargo test --profile ci --features device-tests --doc 2>&1 || host_rc=1
[ $host_rc = 0 ] || { echo "test.sh: host tests failed" >&2; exit 1; }
registry_result() {
  local rc=0
  echo "-- host registry::"
  wait "$registry_pid" || rc=1
  registry_pid=
  cat target/registry-tests.log
  [ $rc = 0 ] || { echo "test.sh: the registry's host tests failed" >&2; exit 1; }
}
[ $quick = 0 ] || registry_result

if [ $quick = 1 ]; then
  step "device tests, quick lane (one boot)"
  bench_scripts/softroce.sh run --timeout "${DEVICE_TEST_TIMEOUT:-600}" -- bash -c '
    echo "device: $RDMA_BENCH_DEVICE, GID index $RDMA_BENCH_GID_INDEX"
    echo "-- device ${*:2}"
    "$@" --test-threads=2 --color never' quick-device-tests "$device_bin" "${QUICK_DEVICE[@]}"
  step ""
  echo "== [$(date +%T)] quick lane passed (bench_scripts/test.sh without --quick runs everything)"
  exit 0
fi

step "compile-only: an older, smaller install (headers without ibv_wr_* / ibv_query_gid_ex, as rdma-core < v24, and no librdmacm)"
# The installed headers with the extended post API cut out (bench_scripts/old-verbs-headers.sh),
# librdmacm left out: the cfg-gated code must build and lint clean, build.rs must say what is
# off, and --post-api wr and -R must be refused with one line. Debug profile: this is about
# compiling, not speed.
old_inc=$(bench_scripts/old-verbs-headers.sh "$here/target/no-wr-api/include")
# The lint's target dir: its compiled dependencies serve here and in the v55 build below; only
# the crate, whose build script watches these variables, is compiled again.
old_env=(env RDMA_CORE_INCLUDE_DIR="$old_inc" RDMA_BENCH_NO_RDMACM=1)
"${old_env[@]}" cargo clippy --all-targets --features device-tests -- -D warnings 2>&1 |
  tee target/no-wr-api/clippy.log
grep -q "rdma-core headers lack ibv_wr_\*" target/no-wr-api/clippy.log ||
  { echo "test.sh: build.rs did not warn that ibv_wr_* is missing" >&2; exit 1; }
"${old_env[@]}" cargo test --test host -- cli::post_api_wr_without_the_wr_api cli::rdma_cm_without_librdmacm --exact 2>&1

step "rdma-core v55 from source (cached under ~/.cache/rdma-bench/rdma-core-55): device tests against it (build) and the unit tests (built and run)"
# The in-process verbs tests, the proof of which libibverbs is loaded, the RC/UC WRITE/READ
# benchmarks and RDMA CM (ours on v55 against perftest on the distribution's rdma-core; not the
# example benchmark, which `cargo test --test` does not build and which adds nothing ABI-wise), built
# against v55 in the debug profile; build.rs makes its lib dir the binaries' RUNPATH, so they load
# v55 (and v55's own rxe provider) with no LD_LIBRARY_PATH, while perftest stays on the system's.
# The library's unit tests (host-only: no device, no verbs call) are built here too, against the
# newest headers, so that no cfg-gated code is left out, and run on the host.
v55_start=$SECONDS
rdma55=$(bench_scripts/rdma-core-build.sh)
V55_TESTS=(verbs:: portability:: bench:: perf::rdma_cm_connects_every_tool
  --skip bench::an_example_benchmark_runs_through_run_local_compare_and_plot)
built=$(RDMA_CORE_INCLUDE_DIR="$rdma55/include" RDMA_CORE_LIB_DIR="$rdma55/lib" \
  built_tests --features device-tests --lib --test device 2>target/v55-build.log) ||
  { cat target/v55-build.log >&2; echo "test.sh: the v55 build failed" >&2; exit 1; }
v55_bin=$(pick test device) unit_bin=$(pick lib rdma_bench)
[ -n "$v55_bin" ] && [ -n "$unit_bin" ] ||
  { cat target/v55-build.log >&2; echo "test.sh: the v55 device test binary or the unit tests were not built" >&2; exit 1; }
echo "v55 build step: $((SECONDS - v55_start)) s; $(ldd "$v55_bin" | grep libibverbs)"
echo "-- unit tests (debug, rdma-core v55 headers)"
"$unit_bin" --color never || { echo "test.sh: the unit tests failed" >&2; exit 1; }

step "registry host tests (what is left of their wait after the two builds)"
registry_result

step "device tests (on ${SOFTROCE_VM:+forced }Soft-RoCE or the host's device)"
# Each run prints libtest's own "test result:" line; any failure fails the run. The arguments:
# the one-guest filters of the device binary, then after "--" those of its v55 build, run in the
# same boot. failures:: (mostly waiting out registry entries' expiry: ~25 s of CPU in ~95 s),
# the v55 set (~100 s) and the instruction gate (~60 s) run one after the other in a process
# beside the main set (~310 s at three threads).
GATE_BIN=$here/target/ci GATE=${INSTR_GATE_PCT:-5} THREADS=${DEVICE_TEST_THREADS:-3} DEVICE_BIN=$device_bin V55_BIN=$v55_bin \
  bench_scripts/softroce.sh run --timeout "${DEVICE_TEST_TIMEOUT:-1500}" -- bash -c '
  rc=0 one=() v55=()
  while [ "$1" != -- ]; do one+=("$1"); shift; done
  shift
  v55=("$@")
  echo "device: $RDMA_BENCH_DEVICE, GID index $RDMA_BENCH_GID_INDEX"
  # Beside the main set, one after the other: failures:: (mostly waiting out registry entries),
  # the v55 set, the gate. The v55 prefix carries only the rxe provider: a hardware device runs
  # the v44 set alone.
  beside_log=$(mktemp)
  echo "-- device failures::, the rdma-core v55 set and the instruction gate, started; they run beside the tests below, their output after theirs"
  (
    echo "-- device failures:: (beside the main set)"
    "$DEVICE_BIN" failures:: --test-threads=2 --color never || brc=1
    case $RDMA_BENCH_DEVICE in
      rxe*)
        echo "-- device (rdma-core v55) ${v55[*]} (beside the main set)"
        "$V55_BIN" "${v55[@]}" --test-threads=2 --color never || brc=1 ;;
      *) echo "-- rdma-core v55 tests skipped: $RDMA_BENCH_DEVICE is not Soft-RoCE (the v55 build has only the rxe provider)" ;;
    esac
    # The zero-overhead claim: user instructions per WRITE (callgrind) of rw-tput-sender and
    # write-bw against perftest'"'"'s ib_write_bw on this device, at most GATE % above
    # (docs/testing.md). Callgrind counts instructions, not time: the posting side, slowed ~50x,
    # finds a completion at every poll with the main set running beside it too.
    echo "-- instruction gate: ours against ib_write_bw, WRITE 32 B, postlist 1 and 16 (callgrind; beside the main set)"
    COMPARE_PARTS=gate COMPARE_BIN="$GATE_BIN" COMPARE_N=22400 COMPARE_GATE="$GATE" \
      bench_scripts/compare-perftest.sh || brc=1
    exit ${brc:-0}
  ) >"$beside_log" 2>&1 &
  beside_pid=$!
  echo "-- device --skip failures:: ${one[*]}"
  "$DEVICE_BIN" --skip failures:: "${one[@]}" --test-threads="$THREADS" --color never || rc=1
  wait $beside_pid || rc=1
  cat "$beside_log"
  rm -f "$beside_log"
  exit $rc' device-tests "${ONE_GUEST_SKIP[@]}" -- "${V55_TESTS[@]}"

# on_nodes N LABEL [softroce options] -- FILTER: the device binary's tests that FILTER selects,
# one at a time, on every node of an N-guest testbed.
on_nodes() {
  local nodes=$1 label=$2 opts=()
  shift 2
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  bench_scripts/softroce.sh run --nodes "$nodes" "${opts[@]}" --timeout "${STEP_TIMEOUT:-${DEVICE_TEST_TIMEOUT:-900}}" -- bash -c '
    echo "-- device $2 on node $SOFTROCE_NODE"
    "$1" "$2" --test-threads=1 --color never' "$label" "$device_bin" "$1"
}

step "fabric tests (one Soft-RoCE guest with two NUMA nodes and Soft-iWARP beside rxe0; each test changes the guest: hugepages, addresses)"
on_nodes 1 fabric-tests --numa --siw -- fabric::

step "two-node tests (two Soft-RoCE guests on one virtual Ethernet)"
on_nodes 2 twonode-tests -- twonode::

step "IPv6-only two-node tests (two Soft-RoCE guests whose Ethernet has no IPv4 address)"
on_nodes 2 ipv6only-tests --ipv6-only -- ipv6only::

step "three-node tests (three Soft-RoCE guests on one virtual Ethernet, sshd in each)"
# Three one-vCPU guests on 2 cores: 7.5 minutes on a quiet host, twice that on a loaded one.
STEP_TIMEOUT=${DEVICE_TEST_TIMEOUT:-1800} on_nodes 3 multinode-tests --sshd -- multinode::
step ""
echo "== [$(date +%T)] all tests passed"
