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
