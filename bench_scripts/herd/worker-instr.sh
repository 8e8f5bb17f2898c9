#!/usr/bin/env bash
# HERD's server-side cost: user-space instructions per request of one worker process, counted
# exactly by callgrind as (Ir(N2) - Ir(N1)) / (N2 - N1) with the worker's --iters N1 and N2, so
# that setup (connecting, populating the store) and teardown cancel. Everything the worker
# process runs is counted: the request poll, the store's batch, the replies, the provider's
# post_send and CQ polls.
#   bench_scripts/herd/worker-instr.sh [herd flags...]      e.g. --postlist 8 --num-clients 8
# Defaults (a store that fits the testbed): 1 worker, 4 client threads, --postlist 4, --window 16,
# 5 % PUT, 64 Ki keys, 16 Ki buckets, an 8 MiB log, --hugepages off. A master and the client
# process run beside the worker (not counted) through a private memcached.
# INSTR_BIN="DIR..." counts each build's herd in turn, in the same boot (e.g. an older checkout's
# target/release, for a before/after); INSTR_N1 / INSTR_N2 (10000 / 30000) set the requests. The
# callgrind files stay in target/instr-herd/ for callgrind_annotate. Without an ACTIVE RDMA port
# the script runs itself in the Soft-RoCE testbed (bench_scripts/softroce.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$(dirname "$here")"
source "$here/lib/testbed.sh"
prog=worker-instr.sh
B=${INSTR_BIN:-target/release}
N1=${INSTR_N1:-10000}
N2=${INSTR_N2:-30000}
num='^[0-9]+$'
[[ $N1 =~ $num && $N2 =~ $num && $N1 -ge 1 && $N2 -gt $N1 ]] ||
  { echo "$prog: INSTR_N1 and INSTR_N2 must be whole numbers with 1 <= INSTR_N1 < INSTR_N2" >&2; exit 2; }
check_bins() {
  for d in $B; do
    [ -x "$d/herd" ] || { echo "$prog: $d/herd not found (INSTR_BIN names directories that hold a built herd)" >&2; exit 2; }
  done
}
[ -z "${INSTR_BIN:-}" ] || check_bins # before a build: a wrong INSTR_BIN is refused at once
build_outside_testbed --bin herd
check_bins
on_device "${INSTR_TIMEOUT:-1200}" target/instr-herd "$0" "$@"
for t in valgrind memcached python3; do
  command -v $t >/dev/null || { echo "$prog: $t not found (bench_scripts/softroce.sh setup installs it)" >&2; exit 1; }
done
dev=$(active_device)
common=(--device "$dev" --num-workers 1 --num-clients 4 --postlist 4 --window 16
  --update-percentage 5 --num-keys 65536 --num-buckets 16384 --log-bytes 8388608
  --hugepages off --connect-timeout 120)
[ -n "${RDMA_BENCH_GID_INDEX:-}" ] && common+=(--gid-index "$RDMA_BENCH_GID_INDEX")
common+=("$@") # the user's flags come last: clap keeps the last of a repeated flag
user=(); [ "$(id -u)" = 0 ] && user=(-u root)
out=target/instr-herd
mkdir -p "$out"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
ir() { # HERD_BIN REQUESTS NAME -> total Ir of the worker process
  local bin=$1 n=$2 name=$3 port mc ma cl
  port=$(free_tcp_port)
  memcached -l 127.0.0.1 -p "$port" -U 0 "${user[@]}" &
  mc=$!
  sleep 0.5
  local reg=(--registry "127.0.0.1:$port")
  "$bin" --master 1 "${common[@]}" "${reg[@]}" --duration 600 >"$out/$name.master.log" 2>&1 &
  ma=$!
  "$bin" --is-client 1 --num-threads 4 "${common[@]}" "${reg[@]}" --duration 600 >"$out/$name.client.log" 2>&1 &
  cl=$!
  pids=("$mc" "$ma" "$cl")
  timeout 900 valgrind --tool=callgrind --callgrind-out-file="$out/$name.cg" "$bin" "${common[@]}" "${reg[@]}" \
    --iters "$n" --duration 600 >"$out/$name.worker.log" 2>&1 ||
    { echo "$prog: the worker failed ($(tail -1 "$out/$name.worker.log")), see $out/$name.worker.log" >&2; exit 1; }
  kill -INT "$cl" "$ma" 2>/dev/null || true
  wait "$cl" "$ma" 2>/dev/null || true
  kill "$mc" 2>/dev/null || true
  wait "$mc" 2>/dev/null || true
  pids=()
  awk '/^(summary|totals):/{print $2; exit}' "$out/$name.cg"
}
i=0
for d in $B; do
  i=$((i + 1))
  a=$(ir "$d/herd" "$N1" "b$i-$N1"); echo "$d: Ir at $N1 requests: $a" >&2
  b=$(ir "$d/herd" "$N2" "b$i-$N2"); echo "$d: Ir at $N2 requests: $b" >&2
  python3 -c "import sys; a,b,n1,n2=map(int,sys.argv[1:5]); print(f'{(b-a)/(n2-n1):.1f} user instructions per request, worker side ({sys.argv[5]})')" \
    "$a" "$b" "$N1" "$N2" "$d/herd ${*:-(defaults)}"
done
