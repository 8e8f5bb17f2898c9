#!/usr/bin/env bash
# Runs both roles of one benchmark on this host for --duration seconds (default 3) and prints
# their output ([server]/[client] prefixed) ending with the summary; through softroce.sh when the
# host has no ACTIVE RDMA port.
#
#   bench_scripts/run-local.sh rw-tput-sender --size 32 --postlist 16 --do-read 1 [--duration 5]
#   bench_scripts/run-local.sh write-bw -s 32 -n 100000       (perftest's tools: rdma-bench <tool>)
#   bench_scripts/run-local.sh rc-swarm --num-threads 2 --vms-per-process 2 [--num-processes N]
#
# Both processes get the same flags (the client also --is-client 1); a private memcached on a
# free loopback port is the registry. The passive side outlives the active one and leaves when
# the active side says it is done. rc-swarm runs --num-processes (default 2) equal processes
# ([proc<i>] prefixed), each ending with its "Machine <i> average" line. perftest's tools need no registry: the client reaches the
# server over TCP; --duration becomes -D unless -n or -a is given, --json writes each side's JSON.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
bench=$1; shift
case $bench in
  rw-tput-sender | rw-tput-receiver | ud-sender | ud-receiver | rw-allsig | rw-postlist-latency | sender-scalability) ;;
  ss-sequencer | ss-echo | atomics-sequencer | ws-sequencer | ws-echo | ww-echo | herd | rc-swarm) ;;
  write-bw | write-lat | read-bw | read-lat | send-bw | send-lat | atomic-bw | atomic-lat) ;;
  *) echo "run-local.sh: unknown benchmark '$bench'" >&2; exit 2 ;;
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
    trap 'kill -INT "${pids[@]}" 2>/dev/null || true' INT TERM
    jflags() { [ $json = 1 ] && echo "--out_json --out_json_file $tmp/$1.json"; }
    # shellcheck disable=SC2046
    "$bin" "$bench" "${flags[@]}" -p "$port" $(jflags server) > >(sed -u 's/^/[server] /') 2> >(sed -u 's/^/[server] /' >&2) &
    pids+=($!)
    # shellcheck disable=SC2046
    "$bin" "$bench" "${flags[@]}" -p "$port" $(jflags client) "${RDMA_BENCH_IP:-127.0.0.1}" > >(sed -u 's/^/[client] /') 2> >(sed -u 's/^/[client] /' >&2) &
    pids+=($!)
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    for role in server client; do
      [ -s "$tmp/$role.json" ] && echo "[$role] $(cat "$tmp/$role.json")"
    done
    exit $rc ;;
esac

bin=${RDMA_BENCH_BIN_DIR:-$root/target/release}/$bench
[ -x "$bin" ] || { echo "run-local.sh: $bin not built (cargo build --release)" >&2; exit 1; }
command -v memcached >/dev/null || { echo "run-local.sh: memcached not installed (bench_scripts/softroce.sh setup)" >&2; exit 1; }

# --duration D (or --duration=D) among the flags: the active side runs D seconds. Where the
# server's thread count is a flag of its own (--num-server-threads), --num-threads goes to the
# client only.
duration=3
nproc=2
args=()
client_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --duration=*) duration=${1#*=}; shift ;;
    --num-processes | --num_processes) nproc=$2; shift 2 ;;
    --num-processes=* | --num_processes=*) nproc=${1#*=}; shift ;;
    --num-threads | --num_threads)
      case $bench in
        ss-sequencer | ss-echo | atomics-sequencer | ws-sequencer | ws-echo | herd) client_args+=("$1" "$2") ;;
        *) args+=("$1" "$2") ;;
      esac
      shift 2 ;;
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
trap 'kill -INT "${pids[@]}" 2>/dev/null || true' INT TERM
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
if [ "$bench" = rc-swarm ]; then
  [[ $nproc =~ ^[0-9]+$ ]] || { echo "run-local.sh: --num-processes must be a number" >&2; exit 2; }
  for ((i = 0; i < nproc; i++)); do
    "$bin" "${args[@]}" "${common[@]}" --process-id "$i" --num-processes "$nproc" --duration "$duration" \
      > >(sed -u "s/^/[proc$i] /") 2> >(sed -u "s/^/[proc$i] /" >&2) &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  exit $rc
fi

# Who counts: the passive side runs longer and leaves on the active side's "done".
case $bench in
  rw-tput-receiver | ud-sender | ud-receiver) server_d=$duration; client_d=$duration ;;
  *) server_d=$duration; client_d=$(awk "BEGIN { print $duration + 30 }") ;;
esac
case $bench in rw-tput-receiver | ss-sequencer | ss-echo | atomics-sequencer | ws-sequencer | ws-echo | ww-echo | herd) server_d=$(awk "BEGIN { print $duration + 30 }"); client_d=$duration ;; esac

server_label=server
case $bench in ws-sequencer | ws-echo | herd) server_label=worker ;; esac
# ws-*: a master process makes the request region and the clients' QPs; the server side is
# its worker process.
case $bench in
  ws-sequencer | ws-echo | herd)
    "$bin" "${args[@]}" "${common[@]}" --master 1 --duration "$server_d" > >(sed -u 's/^/[master] /') 2> >(sed -u 's/^/[master] /' >&2) &
    pids+=($!) ;;
esac
"$bin" "${args[@]}" "${common[@]}" --duration "$server_d" > >(sed -u "s/^/[$server_label] /") 2> >(sed -u "s/^/[$server_label] /" >&2) &
pids+=($!)
"$bin" "${args[@]}" "${client_args[@]}" "${common[@]}" --is-client 1 --duration "$client_d" > >(sed -u 's/^/[client] /') 2> >(sed -u 's/^/[client] /' >&2) &
pids+=($!)
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
