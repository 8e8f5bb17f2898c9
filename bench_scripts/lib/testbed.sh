# Sourced by the scripts that need an RDMA device (not run on its own).
testbed_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Builds on the host; never inside softroce.sh's guest, where cargo is slow under emulation and
# anything it writes vanishes with the guest's tmpfs.
build_outside_testbed() {
  [ -n "${SOFTROCE_INSIDE:-}" ] || cargo build --release "$@"
}

# on_device TIMEOUT SHARE SCRIPT [ARGS...]: returns when this host has an ACTIVE RDMA port, else
# re-executes SCRIPT through softroce.sh (SHARE, if not empty, is a directory the guest writes back to).
on_device() {
  local timeout=$1 share=$2
  shift 2
  grep -qs ACTIVE /sys/class/infiniband/*/ports/*/state && return 0
  local opts=(--timeout "$timeout")
  if [ -n "$share" ]; then
    mkdir -p "$share"
    opts+=(--share "$share")
  fi
  exec "$testbed_dir/softroce.sh" run "${opts[@]}" -- "$@"
}

# active_device: RDMA_BENCH_DEVICE (what softroce.sh sets), else the first device with an ACTIVE
# port (what on_device waited for).
active_device() {
  echo "${RDMA_BENCH_DEVICE:-$(basename "$(dirname "$(dirname "$(grep -l ACTIVE /sys/class/infiniband/*/ports/*/state | head -1)")")")}"
}

# free_tcp_port: a TCP port on 127.0.0.1 that nothing listens on now (for a private memcached).
free_tcp_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
