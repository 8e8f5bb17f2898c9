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
# ibv_exp_*, gcc 12; see the patch's header) and built with its own CMakeLists (-DPERF=ON) into
# target/vs-original/bin; SRC_DIR itself is never written. Then, on an ACTIVE RDMA port (through
# bench_scripts/softroce.sh's guest when the host has none; everything runs in ONE boot), per
# point and repetition: ours (bench_scripts/run-local.sh rw-tput-sender …) then the original's
# rw-tput-sender (server = active side, client = passive; a fresh private memcached each run, as
# the original hangs on stale keys; both killed after DURATION seconds, their SysV segments
# removed). Instructions per op by callgrind: ours with bench_scripts/instr-per-op.sh
# ((Ir(N2) - Ir(N1)) / (N2 - N1)); the original, which never stops, with a callgrind dump before
# each of its reports (--dump-before=rand: rw-tput-sender calls rand() once per report) so that
# one dump holds exactly HRD_REPORT_OPS operations of its loop: Ir(dump) / HRD_REPORT_OPS.
#
# Prints per point: ours Mops | original Mops | ratio (ours / original) | ours instr/op |
# original instr/op, then `rdma-bench compare` on one recorded pair per point when that subcommand
# works. A run's rate, for both suites: the median of its `main: Server 0: <ops/s> IOPS` reports
# after the first; a point's: the median over its repetitions. Raw logs: target/vs-original/logs/.
#
# Environment: REPS (2) repetitions per point; DURATION (4) seconds per run; POINTS (default
# "write:32:1 write:32:16 read:32:1 read:32:16", op:size:postlist); VS_INSTR=0 skips callgrind;
# INSTR_N1/INSTR_N2 (10000/50000) ours' iterations under callgrind; ORIG_INSTR_OPS (10000) the
# original's operations per callgrind dump; VS_TIMEOUT (1800) bounds the testbed run.
# Needs: cmake, g++, make, patch, memcached, libibverbs-dev, libgflags-dev, libmemcached-dev,
# libnuma-dev; valgrind for the instr/op columns.
#
# --store: the key-value store alone, on this host (no RDMA device, no testbed): SRC_DIR's mica/
# and libhrd/ are copied to target/vs-original/store-src, patched there with
# bench_scripts/original-store.patch (sizes, passes and a mixed or HERD workload from the
# environment, the timed loop in a function of its own, one line per pass; see its header) and
# built with mica/Makefile (the original's flags but -Werror); then REPS (8) alternated pairs per
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

REPS=${REPS:-2}
DURATION=${DURATION:-4}
POINTS=${POINTS:-"write:32:1 write:32:16 read:32:1 read:32:16"}
VS_INSTR=${VS_INSTR:-1}
ORIG_INSTR_OPS=${ORIG_INSTR_OPS:-10000}
export INSTR_N1=${INSTR_N1:-10000} INSTR_N2=${INSTR_N2:-50000}
num='^[0-9]+$'
[[ $REPS =~ $num && $REPS -ge 1 ]] || die "REPS must be a whole number >= 1" 2
[[ $DURATION =~ $num && $DURATION -ge 1 ]] || die "DURATION must be whole seconds >= 1" 2
[[ $ORIG_INSTR_OPS =~ $num && $ORIG_INSTR_OPS -ge 1000 ]] || die "ORIG_INSTR_OPS must be a number >= 1000" 2
for p in $POINTS; do
  [[ $p =~ ^(write|read):[0-9]+:[0-9]+$ ]] || die "POINTS: '$p' is not op:size:postlist (op write or read)" 2
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
  for b in rw-tput-sender rw-tput-receiver ud-sender ud-receiver; do
    if make -C "$out/cmake" "$b" >>"$out/build.log" 2>&1; then
      cp "$out/src/build/$b" "$bin/"
    elif [ $b = rw-tput-sender ]; then
      die "the original's rw-tput-sender did not build, see $out/build.log"
    else
      echo "$prog: the original's $b did not build (see $out/build.log); not needed for the pairs" >&2
    fi
  done
  build_outside_testbed --bin rw-tput-sender --bin rdma-bench
fi
mkdir -p "$logs"
on_device "${VS_TIMEOUT:-1800}" "$out" "$0" "$src"

# ------------------------------------------------------------------ on the device: the matched pairs
command -v memcached >/dev/null || die "memcached not installed (bench_scripts/softroce.sh setup)"
have_valgrind=0
if [ "$VS_INSTR" = 1 ]; then
  if command -v valgrind >/dev/null; then have_valgrind=1; else echo "$prog: valgrind not installed: no instr/op columns" >&2; fi
fi
[ -x "$bin/rw-tput-sender" ] || die "$bin/rw-tput-sender missing: run vs-original.sh on the host first"
[ -x target/release/rw-tput-sender ] || die "target/release/rw-tput-sender missing (cargo build --release)"
rm -rf "${logs:?}"/*
dev=${RDMA_BENCH_DEVICE:-}
export HRD_REGISTRY_IP=127.0.0.1
[ -n "${RDMA_BENCH_GID_INDEX:-}" ] && export HRD_GID_INDEX=$RDMA_BENCH_GID_INDEX
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

# wait_for FILE REGEX SECS: until FILE has a line matching REGEX; 1 on timeout
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# rate FILE: both suites print `main: Server 0: <ops/s> IOPS` per report; the same estimator for
# both, the median in Mops of the reports after the first (the first spans the ramp-up)
rate() {
  # No report at all (a run that never connected) is an empty rate, not the script's end.
  { grep -o 'main: Server 0: [0-9.]* IOPS' "$1" || true; } | awk '{ print $4 }' |
    awk '{ v[NR] = $1 } END { for (i = (NR > 2 ? 2 : 1); i <= NR; i++) print v[i] / 1e6 }' | median |
    awk '{ if ($1 == "-") print ""; else printf "%.4g\n", $1 }'
}

orig_client() { # log: the passive side of the original's rw-tput-sender
  stdbuf -oL -eL "$bin/rw-tput-sender" --num_threads 1 --dual_port 0 --use_uc 0 --is_client 1 --machine_id 0 >"$1" 2>&1 &
  kids+=($!)
  client=$!
}

# ours NAME SIZE POSTLIST READ REP -> Mops of the active side (the server)
ours() {
  local log=$logs/ours-$1-r$5.log
  bench_scripts/run-local.sh rw-tput-sender --size "$2" --postlist "$3" --do-read "$4" --duration "$DURATION" --json >"$log" 2>&1 || true
  { grep '^\[server\] main: Server 0: ' "$log" || true; } | rate /dev/stdin
}

# original NAME SIZE POSTLIST READ REP REPORT_OPS -> Mops
original() {
  local log=$logs/original-$1-r$5.log mc client server
  trap cleanup EXIT
  start_mc
  orig_client "$logs/original-$1-r$5.client.log"
  HRD_REPORT_OPS=$6 stdbuf -oL -eL "$bin/rw-tput-sender" --num_threads 1 --dual_port 0 --use_uc 0 --is_client 0 \
    --size "$2" --postlist "$3" --do_read "$4" >"$log" 2>&1 &
  server=$!
  kids+=($server)
  if wait_for "$log" 'main: Server 0 connected' 60; then
    sleep "$DURATION"
    # at least two reports, however slow the device
    for _ in $(seq $((DURATION * 10))); do
      [ "$(grep -c 'main: Server 0: .* IOPS' "$log")" -ge 2 ] && break
      sleep 0.1
    done
  else
    echo "$prog: the original did not connect within 60 s (see $log)" >&2
  fi
  stop "$server" "$client"
  stop "$mc"
  rate "$log"
}

# ours_instr SIZE POSTLIST READ -> user instructions per op (bench_scripts/instr-per-op.sh)
ours_instr() {
  local o
  o=$(bench_scripts/instr-per-op.sh --size "$1" --postlist "$2" --do-read "$3" 2>>"$logs/instr.log") || true
  echo "$o" >>"$logs/instr.log"
  sed -n 's/^\([0-9.]*\) user instructions per op.*/\1/p' <<<"$o"
}

# orig_instr NAME SIZE POSTLIST READ -> user instructions per op of the original's active side
orig_instr() {
  local d=$logs/cg-$1 mc client server i parts=()
  trap cleanup EXIT
  mkdir -p "$d"
  start_mc
  orig_client "$d/client.log"
  HRD_REPORT_OPS=$ORIG_INSTR_OPS valgrind --tool=callgrind --dump-before=rand --callgrind-out-file="$d/cg.out" \
    "$bin/rw-tput-sender" --num_threads 1 --dual_port 0 --use_uc 0 --is_client 0 \
    --size "$2" --postlist "$3" --do_read "$4" >"$d/server.log" 2>&1 &
  server=$!
  kids+=($server)
  # dump k holds what ran between the (k-1)-th and k-th report: whole intervals are dumps 2, 3, …
  for ((i = 0; i < 3000; i++)); do
    [ -s "$d/cg.out.4" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  stop "$server" "$client"
  stop "$mc"
  for i in 2 3 4; do
    [ -s "$d/cg.out.$i" ] || continue
    parts+=("$(awk '/^(summary|totals):/ { print $2; exit }' "$d/cg.out.$i")")
  done
  [ ${#parts[@]} -gt 0 ] || { echo "$prog: callgrind made no whole report interval of the original (see $d)" >&2; return 0; }
  printf '%s\n' "${parts[@]}" | awk -v n="$ORIG_INSTR_OPS" '{ printf "%.1f\n", $1 / n }' | median
}

t0=$(date +%s)
echo "$prog: device ${dev:-(first ACTIVE port)}, gid index ${RDMA_BENCH_GID_INDEX:-auto}; $REPS reps x $DURATION s per side and point" >&2
rows=()
for p in $POINTS; do
  IFS=: read -r op size pl <<<"$p"
  rd=0; [ "$op" = read ] && rd=1
  name=rw-tput-sender-$op-$size-pl$pl
  o_vals=(); c_vals=(); report=20000
  for ((r = 1; r <= REPS; r++)); do
    o=$(ours "$name" "$size" "$pl" "$rd" "$r")
    [ -n "$o" ] && o_vals+=("$o") && report=$(awk -v m="$o" 'BEGIN { r = int(m * 1e6 / 2); print (r < 1000 ? 1000 : r) }')
    c=$(original "$name" "$size" "$pl" "$rd" "$r" "$report")
    [ -n "$c" ] && [ "$c" != - ] && c_vals+=("$c")
    echo "$prog: $name rep $r: ours ${o:--} Mops, original ${c:--} Mops" >&2
  done
  om=$(printf '%s\n' "${o_vals[@]}" | { grep . || true; } | median | awk '{ print ($1 == "-") ? "-" : sprintf("%.4g", $1) }')
  cm=$(printf '%s\n' "${c_vals[@]}" | { grep . || true; } | median | awk '{ print ($1 == "-") ? "-" : sprintf("%.4g", $1) }')
  oi=-; ci=-
  if [ $have_valgrind = 1 ]; then
    oi=$(ours_instr "$size" "$pl" "$rd"); oi=${oi:--}
    ci=$(orig_instr "$name" "$size" "$pl" "$rd"); ci=${ci:--}
    echo "$prog: $name instr/op: ours $oi, original $ci" >&2
  fi
  # one representative pair per point (the first repetition), for rdma-bench compare
  cp "$logs/original-$name-r1.log" "$logs/original-$name.log" 2>/dev/null || true
  sed -n 's/^\[server\] //p' "$logs/ours-$name-r1.log" | grep -v '^{' >"$logs/ours-$name.txt" || true
  sed -n 's/^\[server\] //p' "$logs/ours-$name-r1.log" | grep '^{' >"$logs/ours-$name.json" || true
  rows+=("$(printf '%s %s %s %s %s %s' "rw-tput-sender_${op^^}_${size}B_postlist_$pl" "$om" "$cm" "$oi" "$ci" "${#c_vals[@]}")")
done

echo
printf '%-40s %10s %13s %7s %14s %18s\n' point "ours Mops" "original Mops" ratio "ours instr/op" "original instr/op"
for row in "${rows[@]}"; do
  read -r pt om cm oi ci _ <<<"$row"
  ratio=$(awk -v a="$om" -v b="$cm" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.3f", a / b }')
  printf '%-40s %10s %13s %7s %14s %18s\n' "${pt//_/ }" "$om" "$cm" "$ratio" "$oi" "$ci"
done
echo "($REPS alternated runs of $DURATION s per side and point, medians; ratio = ours / original; logs in $logs; $(($(date +%s) - t0)) s)"

rb=target/release/rdma-bench
if [ -x "$rb" ]; then
  args=()
  for p in $POINTS; do
    IFS=: read -r op size pl <<<"$p"
    n=rw-tput-sender-$op-$size-pl$pl
    [ -s "$logs/ours-$n.txt" ] && [ -s "$logs/original-$n.log" ] && args+=("$logs/ours-$n.txt" "$logs/original-$n.log")
  done
  if [ ${#args[@]} -gt 0 ] && "$rb" compare "${args[@]}" >"$logs/compare.txt" 2>&1; then
    echo
    cat "$logs/compare.txt"
  fi
fi
