#!/usr/bin/env bash
# Runs every role of one benchmark on this host for --duration seconds (default 3) and prints
# their output ([server]/[client]/[worker]/... prefixed) ending with the summary; through
# softroce.sh when the host has no ACTIVE RDMA port.
#
#   bench_scripts/run-local.sh rw-tput-sender --size 32 --postlist 16 --do-read 1 [--duration 5]
#   bench_scripts/run-local.sh write-bw -s 32 -n 100000       (perftest's tools: rdma-bench <tool>)
#   bench_scripts/run-local.sh rc-swarm --num-threads 2 --vms-per-process 2 [--num-processes N]
#   bench_scripts/run-local.sh rw-mix --read-pct 50            (an example: cargo build --release --examples)
#
# The roles, and which of them count, come from the benchmark binary itself (`<binary>
# --describe`), so an experiment of your own runs here once it is built. Every process gets the
# same flags plus its role's (e.g. --is-client 1); a private memcached on a free loopback port is
# the registry. A role that waits for its peers (the passive side, the servers of the
# applications) runs 30 s longer and leaves when they say they are done. --num-threads goes to
# the roles whose thread count it is. rc-swarm runs --num-processes (default 2) equal processes
# ([proc<i>] prefixed), each ending with its "Machine <i> average" line. perftest's tools need no
# registry: the client reaches the server over TCP; --duration becomes -D unless -n or -a is
# given, --json writes each side's JSON. When a role fails (a refused flag, a peer that cannot
# be reached), the others are stopped at once and the script exits with the failed role's code.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }

# wait_roles: waits for the processes in `pids` (named in `role_of`). The first one to fail
# stops the others at once instead of leaving them to wait out their connect timeout for a peer
# that is gone; returns that failure's code. The stop is SIGTERM, which every role handles as a
# Ctrl-C (it prints what it has and leaves): SIGINT would be lost on a role that has not yet
# installed its handler, because a non-interactive shell starts background jobs with SIGINT ignored.
declare -A role_of=()
wait_roles() {
  local rc=0 code done_pid p live=("${pids[@]}") next
  if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 501)); then
    # No `wait -n -p` before bash 5.1: wait for each in turn.
    for p in "${live[@]}"; do wait "$p" || rc=$?; done
    return "$rc"
  fi
  while [ ${#live[@]} -gt 0 ]; do
    code=0 done_pid=""
    wait -n -p done_pid "${live[@]}" || code=$?
    [ -n "$done_pid" ] || break
    next=()
    for p in "${live[@]}"; do [ "$p" = "$done_pid" ] || next+=("$p"); done
    live=("${next[@]}")
    if [ "$code" != 0 ] && [ "$rc" = 0 ]; then
      rc=$code
      if [ ${#live[@]} -gt 0 ]; then
        echo "run-local.sh: the ${role_of[$done_pid]:-role} exited $code; stopping the other roles" >&2
        kill -TERM "${live[@]}" 2>/dev/null || true
      fi
    fi
  done
  return "$rc"
}
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
bench=$1; shift
bin_dir=${RDMA_BENCH_BIN_DIR:-$root/target/release}
case $bench in
  # perftest's tools are subcommands of rdma-bench.
  write-bw | write-lat | read-bw | read-lat | send-bw | send-lat | atomic-bw | atomic-lat) ;;
  *)
    bin=""
    for d in "$bin_dir" "$bin_dir/examples"; do
      [ -x "$d/$bench" ] && { bin=$d/$bench; break; }
    done
    [ -n "$bin" ] || {
      echo "run-local.sh: unknown benchmark '$bench': no binary $bench in $bin_dir or $bin_dir/examples (cargo build --release [--examples]; rdma-bench list names the built-in ones)" >&2
      exit 2
    } ;;
esac

source "$here/lib/testbed.sh"
on_device "${RUN_LOCAL_TIMEOUT:-600}" "" "$0" "$bench" "$@"

# perftest's tools: one rdma-bench subcommand, server then client, no registry.
case $bench in
  *-bw | *-lat)
    bin=${RDMA_BENCH_BIN_DIR:-$root/target/release}/rdma-bench
    [ -x "$bin" ] || { echo "run-local.sh: $bin not built (cargo build --release)" >&2; exit 1; }
    flags=(); duration=""; json=0; counted=0
    while [ $# -gt 0 ]; do
      case $1 in
        --duration) duration=$2; shift 2 ;;
        --duration=*) duration=${1#*=}; shift ;;
        --json) json=1; shift ;;
        -n | --iters | -a | --all) counted=1; flags+=("$1"); shift ;;
        *) flags+=("$1"); shift ;;
      esac
    done
    [ -n "$duration" ] && [ $counted = 0 ] && flags+=(-D "${duration%.*}")
    [ -n "${RDMA_BENCH_DEVICE:-}" ] && flags+=(-d "$RDMA_BENCH_DEVICE")
    [ -n "${RDMA_BENCH_GID_INDEX:-}" ] && flags+=(-x "$RDMA_BENCH_GID_INDEX")
    port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
    for _ in $(seq 20); do port=$((20000 + RANDOM % 40000)); port_free "$port" && break; done
    tmp=$(mktemp -d)
    pids=()
    trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
    trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' INT TERM
    jflags() { [ $json = 1 ] && echo "--out_json --out_json_file $tmp/$1.json"; }
    # shellcheck disable=SC2046
    "$bin" "$bench" "${flags[@]}" -p "$port" $(jflags server) > >(sed -u 's/^/[server] /') 2> >(sed -u 's/^/[server] /' >&2) &
    pids+=($!)
    role_of[$!]=server
    # shellcheck disable=SC2046
    "$bin" "$bench" "${flags[@]}" -p "$port" $(jflags client) "${RDMA_BENCH_IP:-127.0.0.1}" > >(sed -u 's/^/[client] /') 2> >(sed -u 's/^/[client] /' >&2) &
    pids+=($!)
    role_of[$!]=client
    rc=0
    wait_roles || rc=$?
    for role in server client; do
      [ -s "$tmp/$role.json" ] && echo "[$role] $(cat "$tmp/$role.json")"
    done
    exit $rc ;;
esac

# The benchmark's roles in start order: NAME COUNTS OUTLIVES NUM_THREADS [FLAGS...].
family=""
roles=()
while read -r key rest; do
  case $key in
    family) family=$rest ;;
    role) roles+=("$rest") ;;
  esac
done < <("$bin" --describe)
[ ${#roles[@]} -gt 0 ] || { echo "run-local.sh: $bin --describe named no roles: is it an rdma-bench benchmark?" >&2; exit 2; }
command -v memcached >/dev/null || { echo "run-local.sh: memcached not installed (bench_scripts/softroce.sh setup)" >&2; exit 1; }

# --duration D (or --duration=D) among the flags: the counting side runs D seconds. Where a
# role's thread count is a flag of its own (--num-server-threads, --num-workers), --num-threads
# goes to the other roles only.
duration=3
nproc=2
args=()
threads=()
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --duration=*) duration=${1#*=}; shift ;;
    --num-processes | --num_processes) nproc=$2; shift 2 ;;
    --num-processes=* | --num_processes=*) nproc=${1#*=}; shift ;;
    --num-threads | --num_threads) threads=("$1" "$2"); shift 2 ;;
    --num-threads=* | --num_threads=*) threads=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
dev_args=()
[ -n "${RDMA_BENCH_DEVICE:-}" ] && dev_args+=(--device "$RDMA_BENCH_DEVICE")
[ -n "${RDMA_BENCH_GID_INDEX:-}" ] && dev_args+=(--gid-index "$RDMA_BENCH_GID_INDEX")

# A private memcached on a free loopback port (plain bash: a python3 start costs seconds in the
# emulated testbed). A port taken between the probe and memcached's bind makes it exit: try another.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
mc_user=(); [ "$(id -u)" = 0 ] && mc_user=(-u root)
pids=()
mc=""
cleanup() { kill "${pids[@]}" $mc 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' INT TERM
for _ in $(seq 20); do
  port=$((20000 + RANDOM % 40000))
  port_free "$port" || continue
  memcached -l 127.0.0.1 -p "$port" -U 0 "${mc_user[@]}" &
  mc=$!
  for _ in $(seq 100); do port_free "$port" || break; kill -0 "$mc" 2>/dev/null || break; sleep 0.1; done
  # A memcached that lost the port to another listener exits at once: still alive a moment
  # after the port answers means the listener is ours.
  sleep 0.2
  kill -0 "$mc" 2>/dev/null && ! port_free "$port" && break
  kill "$mc" 2>/dev/null || true
  wait "$mc" 2>/dev/null || true
  mc=""
done
[ -n "$mc" ] || { echo "run-local.sh: could not start memcached on a loopback port" >&2; exit 1; }

common=(--registry "127.0.0.1:$port" "${dev_args[@]}")
# rc-swarm: N equal processes, one per emulated machine.
if [ "$family" = swarm ]; then
  [[ $nproc =~ ^[0-9]+$ ]] || { echo "run-local.sh: --num-processes must be a number" >&2; exit 2; }
  for ((i = 0; i < nproc; i++)); do
    "$bin" "${args[@]}" "${threads[@]}" "${common[@]}" --process-id "$i" --num-processes "$nproc" --duration "$duration" \
      > >(sed -u "s/^/[proc$i] /") 2> >(sed -u "s/^/[proc$i] /" >&2) &
    pids+=($!)
    role_of[$!]=proc$i
  done
  rc=0
  wait_roles || rc=$?
  exit $rc
fi

# Every role in its order; one that waits for its peers outlives the counting side.
long=$(awk "BEGIN { print $duration + 30 }")
for role in "${roles[@]}"; do
  read -r name _counts outlives num_threads flags <<<"$role"
  d=$duration
  [ "$outlives" = 1 ] && d=$long
  role_threads=()
  [ "$num_threads" = 1 ] && role_threads=("${threads[@]}")
  # shellcheck disable=SC2086
  "$bin" "${args[@]}" "${role_threads[@]}" "${common[@]}" $flags --duration "$d" \
    > >(sed -u "s/^/[$name] /") 2> >(sed -u "s/^/[$name] /" >&2) &
  pids+=($!)
  role_of[$!]=$name
done
rc=0
wait_roles || rc=$?
exit $rc
