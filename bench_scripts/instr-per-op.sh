#!/usr/bin/env bash
# User-space instructions per posted operation of rw-tput-sender's active side, counted exactly by
# callgrind: (Ir(N2) - Ir(N1)) / (N2 - N1) with --iters N1 and N2, so setup and teardown cancel.
#   bench_scripts/instr-per-op.sh [rw-tput-sender flags...]      e.g. --postlist 16 --inline 0
# Defaults: WRITE 32 B, --reap eager (the original's rule), --hugepages off. A passive client runs
# beside it through a private memcached. INSTR_BIN=DIR counts another build's binary (e.g. an
# older checkout's target/release) in the same boot; INSTR_N1 / INSTR_N2 set the iterations;
# INSTR_ANNOTATE=1 also prints the N2 run's most expensive functions (callgrind_annotate); the
# callgrind files stay in target/instr/ for line-level annotation.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")"
source "$here/lib/testbed.sh"
build_outside_testbed --bin rw-tput-sender
on_device "${INSTR_TIMEOUT:-1200}" target/instr "$0" "$@"
for t in valgrind memcached python3; do
  command -v $t >/dev/null || { echo "instr-per-op.sh: $t not found (bench_scripts/softroce.sh setup installs it)" >&2; exit 1; }
done
B=${INSTR_BIN:-target/release}
N1=${INSTR_N1:-50000}
N2=${INSTR_N2:-250000}
dev=$(active_device)
args=(--device "$dev")
[ -n "${RDMA_BENCH_GID_INDEX:-}" ] && args+=(--gid-index "$RDMA_BENCH_GID_INDEX")
port=$(free_tcp_port)
user=(); [ "$(id -u)" = 0 ] && user=(-u root)
memcached -l 127.0.0.1 -p "$port" -U 0 "${user[@]}" &
mc=$!
trap 'kill $mc 2>/dev/null || true' EXIT
sleep 0.5
args+=(--registry "127.0.0.1:$port")
out=target/instr # the last run's callgrind files stay here (cg.N1, cg.N2) for callgrind_annotate
mkdir -p "$out"
ir() { # iters flags... -> total Ir of the active side
  local n=$1; shift
  "$B/rw-tput-sender" --is-client 1 "${args[@]}" --duration 600 >/dev/null 2>&1 &
  local c=$!
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.$n" "$B/rw-tput-sender" "${args[@]}" \
    --size 32 --hugepages off --iters "$n" "$@" >/dev/null 2>&1 || { echo "instr-per-op.sh: the run failed" >&2; exit 1; }
  wait $c || true
  awk '/^(summary|totals):/{print $2; exit}' "$out/cg.$n"
}
a=$(ir "$N1" "$@"); echo "Ir at $N1: $a" >&2
b=$(ir "$N2" "$@"); echo "Ir at $N2: $b" >&2
if [ -n "${INSTR_ANNOTATE:-}" ]; then
  callgrind_annotate --inclusive=no "$out/cg.$N2" 2>/dev/null | grep -E '^ *[0-9,]+ ' | head -25
fi
python3 -c "import sys; a,b,n1,n2=map(int,sys.argv[1:5]); print(f'{(b-a)/(n2-n1):.1f} user instructions per op ({sys.argv[5]})')" \
  "$a" "$b" "$N1" "$N2" "$B/rw-tput-sender ${*:-(defaults)}"
