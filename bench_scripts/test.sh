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

# The quick lane's device tests, "TARGET [libtest filter args]": WRITE, READ, SEND and UD through the
# verbs layer, one paper benchmark with both roles (WRITE then READ, --verify), one perftest tool
# against Debian's perftest both ways. One boot serves them all.
QUICK_DEVICE=(
  "device_verbs rc_write_inline_and_from_mr rc_read rc_send_recv_and_send_with_imm ud_send_lands_after_the_grh --exact"
  "device_bench rw_tput_sender_write_two_threads_then_read --exact"
  "device_perf bw_tools_against_perftest_both_ways --exact")

if [ $quick = 0 ]; then
  step "build (profile ci: release without fat LTO; every target, one feature set, built once)"
  cargo build --profile ci --all-targets --features device-tests
  targets=()
else
  # The library, its unit tests, the binaries, every host test target and the quick device ones.
  step "build (profile ci: the host test targets and the quick lane's device targets)"
  targets=(--lib --bins)
  for f in tests/*.rs; do
    t=$(basename "$f" .rs)
    case $t in device_* | fabric_* | twonode_* | multinode_*) ;; *) targets+=(--test "$t") ;; esac
  done
  for t in "${QUICK_DEVICE[@]}"; do targets+=(--test "${t%% *}"); done
  cargo test --profile ci --features device-tests --no-run "${targets[@]}"
fi
# test_bins KIND PREFIX: the test executables of kind lib or test whose target name starts with
# PREFIX (lib: the unit tests), from the build above.
test_bins() {
  cargo test --profile ci --features device-tests --no-run --message-format=json "${targets[@]}" 2>/dev/null |
    python3 -c '
import json, sys
kind, prefix = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable") and kind in t.get("kind", []) and t["name"].startswith(prefix):
        print(t["name"], m["executable"])
' "$1" "$2"
}
mapfile -t all_tests < <(test_bins test "")
mapfile -t unit < <(test_bins lib "")

step "host-only tests (unit tests, doc tests, and every test target but the device ones)"
# The registry binary spends its 40 s waiting out its own timeouts: it runs beside the others
# and, in the full run, beside the two builds that follow them; its output is printed after
# theirs.
host_rc=0 registry_pid=
for t in "${unit[@]}" "${all_tests[@]}"; do
  case ${t%% *} in
    device_* | fabric_* | twonode_* | multinode_*) continue ;;
    registry)
      "${t#* }" --color never >target/registry-tests.log 2>&1 &
      registry_pid=$!
      continue ;;
  esac
  echo "-- ${t%% *}"
  "${t#* }" --color never || host_rc=1
done
cargo test --profile ci --features device-tests --doc 2>&1 || host_rc=1
[ $host_rc = 0 ] || { echo "test.sh: host tests failed" >&2; exit 1; }
[ -n "$registry_pid" ] || { echo "test.sh: the registry test binary was not built" >&2; exit 1; }
registry_result() {
  local rc=0
  echo "-- registry"
  wait "$registry_pid" || rc=1
  registry_pid=
  cat target/registry-tests.log
  [ $rc = 0 ] || { echo "test.sh: the registry's host tests failed" >&2; exit 1; }
}
[ $quick = 0 ] || registry_result

pick() { for t in "${all_tests[@]}"; do case ${t%% *} in "$1"*) echo "${t#* }" ;; esac; done; }

if [ $quick = 1 ]; then
  step "device tests, quick lane (one boot)"
  quick_cmds=()
  for q in "${QUICK_DEVICE[@]}"; do
    exe=$(pick "${q%% *}")
    [ -n "$exe" ] || { echo "test.sh: the device test binary ${q%% *} was not built" >&2; exit 1; }
    quick_cmds+=("$exe${q#"${q%% *}"}")
  done
  bench_scripts/softroce.sh run --timeout "${DEVICE_TEST_TIMEOUT:-600}" -- bash -c '
    rc=0
    echo "device: $RDMA_BENCH_DEVICE, GID index $RDMA_BENCH_GID_INDEX"
    for b in "$@"; do
      read -r -a cmd <<<"$b"
      echo "-- $(basename "${cmd[0]}") ${cmd[*]:1}"
      "${cmd[@]}" --test-threads=2 --color never || rc=1
    done
    exit $rc' quick-device-tests "${quick_cmds[@]}"
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
"${old_env[@]}" cargo test --test cli -- post_api_wr_without_the_wr_api rdma_cm_without_librdmacm --exact 2>&1

# device_failures spends most of its ~80 s waiting out registry entries' expiry (about 25 s of
# CPU): it runs beside the others, device_perf (the longest, ~170 s) first among them.
beside=$(pick device_failures)
mapfile -t bins < <(pick device_perf
  for t in "${all_tests[@]}"; do
    case ${t%% *} in device_perf* | device_failures*) ;; device_*) echo "${t#* }" ;; esac
  done)
mapfile -t fabric < <(pick fabric_)
mapfile -t twonode < <(pick twonode_)
mapfile -t multinode < <(pick multinode_)
[ -n "$beside" ] && [ ${#bins[@]} -gt 0 ] && [ ${#fabric[@]} -gt 0 ] && [ ${#twonode[@]} -gt 0 ] && [ ${#multinode[@]} -gt 0 ] || { echo "test.sh: the device test binaries were not built" >&2; exit 1; }

step "rdma-core v55 from source (cached under ~/.cache/rdma-bench/rdma-core-55) and device tests against it (build)"
# The in-process verbs tests, the proof of which libibverbs is loaded, the RC/UC WRITE/READ
# benchmarks and RDMA CM (ours on v55 against perftest on the distribution's rdma-core; not the
# example benchmark, which `cargo test --test` does not build and which adds nothing ABI-wise), built
# against v55 in the debug profile; build.rs makes its lib dir the binaries' RUNPATH, so they load
# v55 (and v55's own rxe provider) with no LD_LIBRARY_PATH, while perftest stays on the system's.
v55_start=$SECONDS
rdma55=$(bench_scripts/rdma-core-build.sh)
V55_TESTS=(device_verbs device_portability
  "device_bench --skip an_example_benchmark_runs_through_run_local_compare_and_plot" "device_perf rdma_cm_connects_every_tool --exact")
v55_targets=()
for t in "${V55_TESTS[@]}"; do v55_targets+=("--test=${t%% *}"); done
mapfile -t v55 < <(
  RDMA_CORE_INCLUDE_DIR="$rdma55/include" RDMA_CORE_LIB_DIR="$rdma55/lib" \
    cargo test --features device-tests --no-run \
    --message-format=json "${v55_targets[@]}" 2>target/v55-build.log |
    python3 -c '
import json, sys
want = {t.split()[0]: t.split(" ", 1)[1:] for t in sys.argv[1:]}
for line in sys.stdin:
    m = json.loads(line)
    name = m.get("target", {}).get("name")
    if m.get("reason") == "compiler-artifact" and m.get("executable") and name in want:
        print(" ".join([m["executable"]] + want[name]))
' "${V55_TESTS[@]}")
[ ${#v55[@]} -eq ${#V55_TESTS[@]} ] ||
  { cat target/v55-build.log >&2; echo "test.sh: the v55 device test binaries were not built" >&2; exit 1; }
echo "v55 build step: $((SECONDS - v55_start)) s; $(ldd "${v55[0]%% *}" | grep libibverbs)"

step "registry host tests (what is left of their wait after the two builds)"
registry_result

step "device tests (on ${SOFTROCE_VM:+forced }Soft-RoCE or the host's device)"
# Each binary prints libtest's own "test result:" line; any failure fails the run.
# After "--": the v55 binaries, each "PATH [libtest filter args]", in the same boot.
# BESIDE: the binary that runs beside all of them, its output printed after theirs.
GATE_BIN=$here/target/ci GATE=${INSTR_GATE_PCT:-5} BESIDE=$beside \
  bench_scripts/softroce.sh run --timeout "${DEVICE_TEST_TIMEOUT:-1500}" -- bash -c '
  rc=0 label=
  echo "device: $RDMA_BENCH_DEVICE, GID index $RDMA_BENCH_GID_INDEX"
  beside_log=$(mktemp)
  echo "-- $(basename "$BESIDE") started; it runs beside the binaries below, its output after theirs"
  "$BESIDE" --test-threads=2 --color never >"$beside_log" 2>&1 &
  beside_pid=$!
  for b in "$@"; do
    if [ "$b" = -- ]; then
      # The v55 prefix carries only the rxe provider: a hardware device runs the v44 set alone.
      case $RDMA_BENCH_DEVICE in
        rxe*) label=" (rdma-core v55)"; continue ;;
        *) echo "-- rdma-core v55 tests skipped: $RDMA_BENCH_DEVICE is not Soft-RoCE (the v55 build has only the rxe provider)"; break ;;
      esac
    fi
    read -r -a cmd <<<"$b"
    echo "-- $(basename "${cmd[0]}")$label"
    "${cmd[@]}" --test-threads=2 --color never || rc=1
  done
  echo "-- $(basename "$BESIDE") (beside the binaries above)"
  wait $beside_pid || rc=1
  cat "$beside_log"
  rm -f "$beside_log"
  # The zero-overhead claim: user instructions per WRITE (callgrind) of rw-tput-sender and
  # write-bw against perftest'"'"'s ib_write_bw on this device, at most GATE % above (docs/testing.md).
  echo "-- instruction gate: ours against ib_write_bw, WRITE 32 B, postlist 1 and 16 (callgrind)"
  COMPARE_PARTS=gate COMPARE_BIN="$GATE_BIN" COMPARE_N=22400 COMPARE_GATE="$GATE" \
    bench_scripts/compare-perftest.sh || rc=1
  exit $rc' device-tests "${bins[@]}" -- "${v55[@]}"

# on_nodes N LABEL [softroce options] -- BINARIES: every binary on every node of an N-guest testbed.
on_nodes() {
  local nodes=$1 label=$2 opts=()
  shift 2
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  bench_scripts/softroce.sh run --nodes "$nodes" "${opts[@]}" --timeout "${STEP_TIMEOUT:-${DEVICE_TEST_TIMEOUT:-900}}" -- bash -c '
    rc=0
    for b in "$@"; do
      echo "-- $(basename "$b") on node $SOFTROCE_NODE"
      "$b" --test-threads=1 --color never || rc=1
    done
    exit $rc' "$label" "$@"
}

step "fabric tests (one Soft-RoCE guest with two NUMA nodes and Soft-iWARP beside rxe0; each binary changes the guest: hugepages, addresses)"
on_nodes 1 fabric-tests --numa --siw -- "${fabric[@]}"

step "two-node tests (two Soft-RoCE guests on one virtual Ethernet)"
on_nodes 2 twonode-tests -- "${twonode[@]}"

step "three-node tests (three Soft-RoCE guests on one virtual Ethernet, sshd in each)"
# Three one-vCPU guests on 2 cores: 7.5 minutes on a quiet host, twice that on a loaded one.
STEP_TIMEOUT=${DEVICE_TEST_TIMEOUT:-1800} on_nodes 3 multinode-tests --sshd -- "${multinode[@]}"
step ""
echo "== [$(date +%T)] all tests passed"
