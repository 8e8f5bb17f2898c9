# Shared by bench_scripts/<bench>/run-servers.sh and run-machine.sh (sourced, not run).
# The original's run scripts, minus their pitfalls: memcached is started only if none answers,
# stopped again if we started it, and numactl is used only when the host has it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin_dir=${RDMA_BENCH_BIN_DIR:-$root/target/release}

registry_up() { (exec 3<>"/dev/tcp/${1%:*}/${2:-11211}") 2>/dev/null; }

# The NUMA node of the RDMA device a role runs on: --device NAME among the role's flags, else
# $RDMA_BENCH_DEVICE, else the first device with an ACTIVE port; 0 when sysfs does not say.
nic_numa_node() {
  local dev=${RDMA_BENCH_DEVICE:-} prev="" a n p
  for a in "$@"; do
    [ "$prev" = --device ] && dev=$a
    case $a in --device=*) dev=${a#--device=} ;; esac
    prev=$a
  done
  if [ -z "$dev" ]; then
    for p in /sys/class/infiniband/*/ports/*/state; do
      grep -q ACTIVE "$p" 2>/dev/null && { dev=${p#/sys/class/infiniband/}; dev=${dev%%/*}; break; }
    done
  fi
  n=$(cat "/sys/class/infiniband/$dev/device/numa_node" 2>/dev/null || echo -1)
  if [ "$n" -ge 0 ] 2>/dev/null; then echo "$n"; else echo 0; fi
}

# numactl --cpunodebind=N --membind=N when available, N being NUMA_NODE or else the NIC's node
# (said on stderr), else nothing. Takes the role's flags (for --device).
numa_prefix() {
  local node=${NUMA_NODE:-}
  if [ -z "$node" ]; then
    node=$(nic_numa_node "$@")
    echo "NUMA node $node: the RDMA device's (sysfs); NUMA_NODE=N overrides" >&2
  fi
  if command -v numactl >/dev/null && [ -d "/sys/devices/system/node/node$node" ]; then
    echo numactl --cpunodebind="$node" --membind="$node"
  fi
}

need_bin() {
  [ -x "$bin_dir/$1" ] || { echo "$1 is not built: cargo build --release (in $root)" >&2; exit 1; }
}

# run_servers BENCH FLAGS... : the server side, with a registry on this host.
run_servers() {
  local bench=$1; shift
  need_bin "$bench"
  export HRD_REGISTRY_IP=${HRD_REGISTRY_IP:-127.0.0.1}
  mc=""
  if registry_up "$HRD_REGISTRY_IP"; then
    echo "registry: memcached already answers at $HRD_REGISTRY_IP:11211 (stale entries are detected by run id)"
  else
    command -v memcached >/dev/null || { echo "memcached is not installed (bench_scripts/softroce.sh setup)" >&2; exit 1; }
    local user=(); [ "$(id -u)" = 0 ] && user=(-u root)
    memcached -l 0.0.0.0 -p 11211 "${user[@]}" >/dev/null 2>&1 &
    mc=$!
    trap 'kill $mc 2>/dev/null || true' EXIT
    for _ in $(seq 50); do registry_up 127.0.0.1 && break; sleep 0.1; done
    echo "registry: started memcached on port 11211 (pid $mc)"
  fi
  # shellcheck disable=SC2046
  $(numa_prefix "$@") "$bin_dir/$bench" "$@"
}

# run_machine BENCH MACHINE_ID FLAGS... : a client machine; HRD_REGISTRY_IP names the server host.
run_machine() {
  local bench=$1 id=${2:-}; shift 2 || true
  [[ $id =~ ^[0-9]+$ ]] || { echo "usage: run-machine.sh <machine-id> [extra flags]" >&2; exit 2; }
  need_bin "$bench"
  export HRD_REGISTRY_IP=${HRD_REGISTRY_IP:-127.0.0.1}
  # shellcheck disable=SC2046
  $(numa_prefix "$@") "$bin_dir/$bench" --is-client 1 --machine-id "$id" "$@"
}

# run_master_and_workers BENCH FLAGS... : ws-sequencer/ws-echo's server side, as the original's
# run-servers.sh: a registry, the master process (request region, clients' QPs) in the
# background, then the worker process; the master is stopped when the workers end.
run_master_and_workers() {
  local bench=$1; shift
  need_bin "$bench"
  export HRD_REGISTRY_IP=${HRD_REGISTRY_IP:-127.0.0.1}
  if ! registry_up "$HRD_REGISTRY_IP"; then
    command -v memcached >/dev/null || { echo "memcached is not installed (bench_scripts/softroce.sh setup)" >&2; exit 1; }
    local user=(); [ "$(id -u)" = 0 ] && user=(-u root)
    memcached -l 0.0.0.0 -p 11211 "${user[@]}" >/dev/null 2>&1 &
    mc=$!
    for _ in $(seq 50); do registry_up 127.0.0.1 && break; sleep 0.1; done
    echo "registry: started memcached on port 11211 (pid $mc)"
  fi
  # shellcheck disable=SC2046
  $(numa_prefix "$@") "$bin_dir/$bench" --master 1 "$@" &
  master=$!
  stop_master() {
    kill -INT "$master" 2>/dev/null || true
    wait "$master" 2>/dev/null || true
    if [ -n "${mc:-}" ]; then kill "$mc" 2>/dev/null || true; fi
  }
  trap stop_master EXIT
  local rc=0
  # shellcheck disable=SC2046
  $(numa_prefix "$@") "$bin_dir/$bench" --is-client 0 "$@" || rc=$?
  # The master leaves by itself once every client is done; a failed worker run stops it.
  [ $rc = 0 ] && { wait "$master" || rc=$?; }
  exit $rc
}
