#!/usr/bin/env bash
# vs-original.sh — rdma-bench against the original C suite (efficient/rdma_bench) on the same device
# in the same boot: matched pairs, alternated ours/original, medians, instructions per op.
#
#   bench_scripts/vs-original.sh SRC_DIR
#   bench_scripts/vs-original.sh --store SRC_DIR
#
# SRC_DIR is your checkout of https://github.com/efficient/rdma_bench (the CMake tree with
# libhrd_cpp/). It is copied to target/vs-original/src, patched there with
# bench_scripts/original-gid.patch (GID addressing for RoCE, standard verbs instead of Mellanox's
# ibv_exp_*, gcc 12, a callgrind mark per report; see the patch's header) and built with its own
# CMakeLists (-DPERF=ON) into target/vs-original/bin; atomics-sequencer twice, as its workload is
# compile-time (main.h's constants set on the copy: the sequencer's one counter, and DrTM-KV on
# 16 MiB). SRC_DIR itself is never written. Then, on an ACTIVE RDMA port (through
# bench_scripts/softroce.sh's guest when the host has none; everything runs in ONE boot), per pair
# and repetition: ours (bench_scripts/run-local.sh BENCH …) then the original's two roles (a fresh
# private memcached each run, as the original hangs on stale keys; both killed after DURATION
# seconds and two reports, their SysV segments removed).
#
# Pairs (PAIRS, default all, in this order): rw-tput-sender-{write,read}-pl{1,16} (32-byte
# WRITE/READ at postlist 1 and 16), rw-tput-receiver, ud-sender, ud-receiver, ss-echo,
# atomics-sequencer (the sequencer: every FETCH_AND_ADD on one counter), atomics-sequencer-drtm
# (DrTM-KV's READ/atomic mix); each at the original's run-script flags, one thread per role,
# compared on the side the original reports (the server for ud-receiver and ss-echo). The table
# also lists the benchmarks no pair covers, and why.
#
# Instructions per op by callgrind, on the measured side only: ours (Ir(N2) - Ir(N1)) / (N2 - N1)
# with --iters N1 and N2 (setup and teardown cancel); the original, which never stops, with a
# callgrind dump before each of its reports (--dump-before=hrd_report_mark, the patch's empty
# function called once per report) so that one dump holds exactly HRD_REPORT_OPS operations of its
# loop: Ir(dump) / HRD_REPORT_OPS, the median of three dumps.
#
# Prints per pair: ours Mops | original Mops | ratio (ours / original) | ours instr/op | original
# instr/op | ratio (ours / original). A run's rate: ours, the median of its per-second reports
# after the first; the original's, which reports every HRD_REPORT_OPS operations (set to half a
# second at ours' rate, a multiple of 64), the median of HRD_REPORT_OPS / the time between two
# reports' arrival, after the first interval. A pair's: the median over its repetitions. Raw logs: target/vs-original/logs/.
#
# Environment: PAIRS (all); REPS (2) repetitions per pair; DURATION (4) seconds per run;
# VS_INSTR=0 skips callgrind; INSTR_N1/INSTR_N2 (10000/50000) ours' iterations under callgrind;
# ORIG_INSTR_OPS (10240, a multiple of 64) the original's operations per callgrind dump; VS_TIMEOUT (3600) bounds
# the testbed run.
# Needs: cmake, g++, make, patch, memcached, libibverbs-dev, libgflags-dev, libmemcached-dev,
# libnuma-dev; valgrind for the instr/op columns.
#
# --store: the key-value store alone, on this host (no RDMA device, no testbed): SRC_DIR's mica/
# and libhrd/ are copied to target/vs-original/store-src, patched there with
# bench_scripts/original-store.patch (passes and a mixed or HERD workload from the environment,
# the timed loop in a function of its own, one line per pass; see its header) and built with
# mica/Makefile (the original's flags but -Werror), the sizes compile-time constants as in the
# original: one binary per batch size at the full size (-D TEST_BATCH_SIZE) and one per batch
# size at 1/CG_SCALE of the sizes for callgrind (-D TEST_NUM_KEYS, TEST_NUM_BKTS, TEST_LOG_CAP);
# then REPS (8) alternated pairs per
# workload of the original's mica/test.c and `rdma-bench kv-bench`, both pinned with taskset to
# CPU STORE_CPU (the last one), PASSES (6) passes a run, stores on 2 MiB hugepages (reserve 576
# first: echo 576 > /proc/sys/vm/nr_hugepages); instructions per op by callgrind on the timed loop
# of both (--toggle-collect, a dump per pass) at 1/CG_SCALE (16) of the sizes, the same load.
# Workloads: test.c's (8 Mi keys, 2 Mi buckets, 1 GiB log, 32-byte values, batches of 16, passes
# of all-PUT / all-GET over a fresh permutation), the same with mixed passes (5 % PUT, batches of
# 32), and HERD's (the store populated in key order, keys drawn uniformly or Zipf 0.99, 5 % PUT,
# batches of 32). Prints per row: original Mops | ours Mops | ours / original | instr/op original /
# ours | GET miss fraction original / ours. Needs gcc, make, patch, taskset, libnuma-dev,
# libmemcached-dev, libibverbs-dev; valgrind for the instr/op column (VS_INSTR=0 skips it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
prog=vs-original.sh

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
die() { echo "$prog: $1" >&2; exit "${2:-1}"; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
if [ "$1" = --store ]; then
  shift
  source "$here/lib/vs-store.sh"
  store_main "$@"
  exit 0
fi
[ $# -eq 1 ] || die "one argument, SRC_DIR (see --help)" 2
layout_msg="SRC_DIR must be a checkout of https://github.com/efficient/rdma_bench (the CMake tree: CMakeLists.txt, libhrd_cpp/hrd_conn.cc, rw-tput-sender/main.cc)"
src=$1
for f in CMakeLists.txt libhrd_cpp/hrd_conn.cc libhrd_cpp/hrd_util.cc rw-tput-sender/main.cc; do
  [ -f "$src/$f" ] || { echo "$prog: $layout_msg; '$src' has no $f" >&2; exit 2; }
done
src=$(cd "$src" && pwd -P)
source "$here/lib/vs-pairs.sh"

REPS=${REPS:-2}
DURATION=${DURATION:-4}
PAIRS=${PAIRS:-$ALL_PAIRS}
VS_INSTR=${VS_INSTR:-1}
ORIG_INSTR_OPS=${ORIG_INSTR_OPS:-10240}
INSTR_N1=${INSTR_N1:-10000}
INSTR_N2=${INSTR_N2:-50000}
num='^[0-9]+$'
[[ $REPS =~ $num && $REPS -ge 1 ]] || die "REPS must be a whole number >= 1" 2
[[ $DURATION =~ $num && $DURATION -ge 1 ]] || die "DURATION must be whole seconds >= 1" 2
[[ $ORIG_INSTR_OPS =~ $num && $ORIG_INSTR_OPS -ge 1024 && $((ORIG_INSTR_OPS % 64)) = 0 ]] ||
  die "ORIG_INSTR_OPS must be a multiple of 64 (so of every postlist), >= 1024" 2
[[ $INSTR_N1 =~ $num && $INSTR_N2 =~ $num && $INSTR_N2 -gt $INSTR_N1 && $INSTR_N1 -ge 1 ]] ||
  die "INSTR_N1 and INSTR_N2 must be whole numbers, 1 <= INSTR_N1 < INSTR_N2" 2
for p in $PAIRS; do
  pair "$p" || die "PAIRS: unknown pair '$p' (the pairs: $(echo $ALL_PAIRS))" 2
done

out=$root/target/vs-original
bin=$out/bin
logs=$out/logs
cd "$root"
source "$here/lib/testbed.sh"

# ---------------------------------------------------------------- host: patch and build both suites
if [ -z "${SOFTROCE_INSIDE:-}" ]; then
  for t in cmake g++ make patch memcached; do
    command -v $t >/dev/null || die "$t not found: install cmake g++ make patch memcached (apt-get install …)"
  done
  for h in gflags/gflags.h libmemcached/memcached.h numa.h infiniband/verbs.h; do
    [ -f "/usr/include/$h" ] || die "/usr/include/$h missing: the original needs libgflags-dev libmemcached-dev libnuma-dev libibverbs-dev"
  done
  command -v valgrind >/dev/null || echo "$prog: valgrind not found: no instr/op columns (bench_scripts/softroce.sh setup installs it)" >&2
  rm -rf "$out/src" "$out/cmake" "$bin"
  mkdir -p "$out/src" "$bin"
  tar -C "$src" --exclude=.git --exclude=./build -cf - . | tar -C "$out/src" -xf -
  patch -d "$out/src" -p1 --forward -s <"$here/original-gid.patch" >"$out/patch.log" 2>&1 ||
    die "bench_scripts/original-gid.patch does not apply to $src (made for efficient/rdma_bench a038ec5, the CMake tree): $(head -3 "$out/patch.log" | tr '\n' ' ')"
  echo "$prog: building the patched original in $out/src" >&2
  cmake -S "$out/src" -B "$out/cmake" -DPERF=ON >"$out/build.log" 2>&1 || die "cmake failed, see $out/build.log"
  for b in rw-tput-sender rw-tput-receiver ud-sender ud-receiver ss-echo; do
    if make -C "$out/cmake" "$b" >>"$out/build.log" 2>&1; then
      cp "$out/src/build/$b" "$bin/"
    else
      echo "$prog: the original's $b did not build (see $out/build.log): its pairs read '-'" >&2
    fi
  done
  build_atomics_variants "$out/src" "$out/cmake" "$bin" ||
    echo "$prog: the original's atomics-sequencer did not build (see $out/build.log): its pairs read '-'" >&2
  bins=()
  for p in $PAIRS; do pair "$p" && bins+=(--bin "$ours_bin"); done
  build_outside_testbed "${bins[@]}" --bin rdma-bench
fi
mkdir -p "$logs"
on_device "${VS_TIMEOUT:-3600}" "$out" "$0" "$src"

# ------------------------------------------------------------------ on the device: the matched pairs
command -v memcached >/dev/null || die "memcached not installed (bench_scripts/softroce.sh setup)"
have_valgrind=0
if [ "$VS_INSTR" = 1 ]; then
  if command -v valgrind >/dev/null; then have_valgrind=1; else echo "$prog: valgrind not installed: no instr/op columns" >&2; fi
fi
rm -rf "${logs:?}"/*
dev=$(active_device)
ours_dev=(--device "$dev")
export HRD_REGISTRY_IP=127.0.0.1
if [ -n "${RDMA_BENCH_GID_INDEX:-}" ]; then
  export HRD_GID_INDEX=$RDMA_BENCH_GID_INDEX
  ours_dev+=(--gid-index "$RDMA_BENCH_GID_INDEX")
fi
mc_user=(); [ "$(id -u)" = 0 ] && mc_user=(-u root)
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Every process a run starts is in kids; the run functions execute in $(…) subshells, each with
# this trap of its own, so that a signalled script leaves no original running (it never exits).
kids=()
cleanup() { [ ${#kids[@]} -gt 0 ] && kill "${kids[@]}" 2>/dev/null; true; }
trap cleanup EXIT

# start_mc: a private memcached on a free loopback port -> $mc (pid), $HRD_REGISTRY_PORT
start_mc() {
  local p
  for _ in $(seq 20); do
    p=$((20000 + RANDOM % 40000))
    port_free "$p" || continue
    memcached -l 127.0.0.1 -p "$p" -U 0 "${mc_user[@]}" >/dev/null 2>&1 &
    mc=$!
    kids+=("$mc")
    for _ in $(seq 50); do port_free "$p" || break; sleep 0.1; done
    sleep 0.2
    if kill -0 "$mc" 2>/dev/null && ! port_free "$p"; then export HRD_REGISTRY_PORT=$p; return 0; fi
    kill "$mc" 2>/dev/null || true
    wait "$mc" 2>/dev/null || true
  done
  die "could not start memcached on a loopback port"
}

# stop PID...: SIGTERM (the original runs until killed), SIGKILL after 3 s, then remove the SysV
# segments those processes created.
stop() {
  local p shm
  kill -TERM "$@" 2>/dev/null || true
  for _ in $(seq 30); do
    local alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
  for p in "$@"; do wait "$p" 2>/dev/null || true; done
  for p in "$@"; do
    for shm in $(ipcs -m -p 2>/dev/null | awk -v c="$p" '$3 == c { print $1 }'); do ipcrm -m "$shm" 2>/dev/null || true; done
  done
}

# reports FILE SIDE: how many reports of SIDE's thread 0 FILE has so far
reports() { grep -a -c "main: $2 0: [0-9]" "$1" 2>/dev/null || true; }

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ours NAME REP -> Mops of ours' measured side (the pair's variables set by `pair NAME`)
ours() {
  local log=$logs/ours-$1-r$2.log
  # shellcheck disable=SC2086 # the flags are words
  bench_scripts/run-local.sh "$ours_bin" $ours_flags --duration "$DURATION" --json >"$log" 2>&1 || true
  ours_rates "$log" "${ours_side^}" | steady
}

# original NAME REP REPORT_OPS -> Mops of the original's measured side
original() {
  local log=$logs/original-$1-r$2 mc pids=() side=${orig_side^} i
  trap cleanup EXIT
  start_mc
  # shellcheck disable=SC2086
  HRD_REPORT_OPS=$3 stdbuf -oL -eL "$bin/$orig_bin" $orig_server > >(stamp >"$log.server.log") 2>&1 &
  pids+=($!)
  # shellcheck disable=SC2086
  HRD_REPORT_OPS=$3 stdbuf -oL -eL "$bin/$orig_bin" $orig_client > >(stamp >"$log.client.log") 2>&1 &
  pids+=($!)
  kids+=("${pids[@]}")
  local m=$log.$orig_side.log
  for ((i = 0; i < 600; i++)); do
    [ "$(reports "$m" "$side")" -ge 1 ] && break
    sleep 0.1
  done
  if [ "$(reports "$m" "$side")" -ge 1 ]; then
    sleep "$DURATION"
    # at least four reports (three intervals, the first dropped), however slow the device
    for _ in $(seq $((DURATION * 10))); do
      [ "$(reports "$m" "$side")" -ge 4 ] && break
      sleep 0.1
    done
  else
    echo "$prog: the original's $orig_bin made no report within 60 s (see $log.*.log)" >&2
  fi
  stop "${pids[@]}"
  stop "$mc"
  orig_rates "$m" "$side" "$3" | steady
}

# ours_instr NAME -> user instructions per op of ours' measured side: (Ir(N2) - Ir(N1)) / (ops(N2)
# - ops(N1)). Both roles get --iters N (the side that posts stops after N, a side that only
# answers or receives stops when its peer is done); ops(N) is what the measured side's JSON
# summary counted.
ours_instr() {
  local d=$logs/cg-ours-$1 n other meas ir=() ops=() mc o
  trap cleanup EXIT
  mkdir -p "$d"
  for n in "$INSTR_N1" "$INSTR_N2"; do
    start_mc
    local common=("${ours_dev[@]}" --registry "127.0.0.1:$HRD_REGISTRY_PORT" --hugepages off --iters "$n")
    if [ "$ours_side" = server ]; then other=(--is-client 1) meas=(); else other=() meas=(--is-client 1); fi
    # shellcheck disable=SC2086
    target/release/$ours_bin $ours_flags "${common[@]}" "${other[@]}" --duration 600 >"$d/other.$n.log" 2>&1 &
    o=$!
    kids+=("$o")
    # shellcheck disable=SC2086
    timeout 300 valgrind --tool=callgrind --callgrind-out-file="$d/cg.$n" target/release/$ours_bin $ours_flags \
      "${common[@]}" "${meas[@]}" --json >"$d/meas.$n.log" 2>&1 || echo "$prog: ours' $1 under callgrind failed (see $d/meas.$n.log)" >&2
    stop "$o"
    stop "$mc"
    ir+=("$(awk '/^(summary|totals):/ { print $2; exit }' "$d/cg.$n" 2>/dev/null)")
    ops+=("$({ grep -a -o '"summary":true.*' "$d/meas.$n.log" || true; } | grep -o '"ops":[0-9]*' | head -1 | cut -d: -f2)")
  done
  [ -n "${ir[0]}" ] && [ -n "${ir[1]}" ] && [ -n "${ops[0]}" ] && [ -n "${ops[1]}" ] || return 0
  awk -v a="${ir[0]}" -v b="${ir[1]}" -v n1="${ops[0]}" -v n2="${ops[1]}" 'BEGIN { if (n2 > n1) printf "%.1f\n", (b - a) / (n2 - n1) }'
}

# orig_instr NAME -> user instructions per op of the original's measured side
orig_instr() {
  local d=$logs/cg-original-$1 mc o meas_flags other_flags i parts=()
  trap cleanup EXIT
  mkdir -p "$d"
  start_mc
  if [ "$orig_side" = server ]; then meas_flags=$orig_server other_flags=$orig_client; else meas_flags=$orig_client other_flags=$orig_server; fi
  # shellcheck disable=SC2086
  HRD_REPORT_OPS=$ORIG_INSTR_OPS "$bin/$orig_bin" $other_flags >"$d/other.log" 2>&1 &
  o=$!
  # shellcheck disable=SC2086
  HRD_REPORT_OPS=$ORIG_INSTR_OPS valgrind --tool=callgrind --dump-before='hrd_report_mark*' --callgrind-out-file="$d/cg.out" \
    "$bin/$orig_bin" $meas_flags >"$d/meas.log" 2>&1 &
  local m=$!
  kids+=("$o" "$m")
  # dump k holds what ran between the (k-1)-th and k-th report: whole intervals are dumps 2, 3, 4
  # (no dump after ten reports: a build without the patch's mark)
  for ((i = 0; i < 1800; i++)); do
    [ -s "$d/cg.out.4" ] && break
    kill -0 "$m" 2>/dev/null || break
    [ "$(reports "$d/meas.log" "${orig_side^}")" -ge 10 ] && [ ! -e "$d/cg.out.1" ] && break
    sleep 0.1
  done
  stop "$m" "$o"
  stop "$mc"
  for i in 2 3 4; do
    [ -s "$d/cg.out.$i" ] || continue
    parts+=("$(awk '/^(summary|totals):/ { print $2; exit }' "$d/cg.out.$i")")
  done
  [ ${#parts[@]} -gt 0 ] || { echo "$prog: callgrind made no whole report interval of the original's $orig_bin (see $d)" >&2; return 0; }
  printf '%s\n' "${parts[@]}" | awk -v n="$ORIG_INSTR_OPS" '{ printf "%.1f\n", $1 / n }' | median
}

t0=$(date +%s)
echo "$prog: device $dev, gid index ${RDMA_BENCH_GID_INDEX:-auto}; $REPS reps x $DURATION s per side and pair" >&2
rows=()
for p in $PAIRS; do
  pair "$p"
  o_vals=() c_vals=() report=20480
  for ((r = 1; r <= REPS; r++)); do
    o=$(ours "$p" "$r")
    # the original reports about twice a second at ours' rate
    # (a multiple of 64, so of every postlist: each report is exactly that many operations)
    [ -n "$o" ] && o_vals+=("$o") && report=$(awk -v m="$o" 'BEGIN { r = int(m * 1e6 / 2 / 64) * 64; print (r < 1024 ? 1024 : r) }')
    c=""
    [ -x "$bin/$orig_bin" ] && c=$(original "$p" "$r" "$report")
    [ -n "$c" ] && c_vals+=("$c")
    echo "$prog: $p rep $r: ours ${o:--} Mops, original ${c:--} Mops" >&2
  done
  om=$(printf '%s\n' "${o_vals[@]}" | { grep . || true; } | median | awk '{ print ($1 == "-") ? "-" : sprintf("%.4g", $1) }')
  cm=$(printf '%s\n' "${c_vals[@]}" | { grep . || true; } | median | awk '{ print ($1 == "-") ? "-" : sprintf("%.4g", $1) }')
  oi=-; ci=-
  if [ $have_valgrind = 1 ]; then
    oi=$(ours_instr "$p"); oi=${oi:--}
    [ -x "$bin/$orig_bin" ] && { ci=$(orig_instr "$p"); ci=${ci:--}; }
    echo "$prog: $p instr/op: ours $oi, original $ci" >&2
  fi
  rows+=("$p $om $cm $oi $ci")
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.3f", a / b }'; }
echo
printf '%-26s %10s %13s %7s %14s %18s %7s\n' pair "ours Mops" "original Mops" ratio "ours instr/op" "original instr/op" ratio
for row in "${rows[@]}"; do
  read -r pt om cm oi ci <<<"$row"
  printf '%-26s %10s %13s %7s %14s %18s %7s\n' "$pt" "$om" "$cm" "$(ratio "$om" "$cm")" "$oi" "$ci" "$(ratio "$oi" "$ci")"
done
for b in "${!UNPAIRED[@]}"; do printf '%-26s %s\n' "$b" "${UNPAIRED[$b]}"; done | sort
echo "($REPS alternated runs of $DURATION s per side and pair, medians; Mops ratio = ours / original (higher is better for ours); instr/op ratio = ours / original (lower is better); logs in $logs; $(($(date +%s) - t0)) s)"
