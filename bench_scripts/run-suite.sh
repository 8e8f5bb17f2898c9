#!/usr/bin/env bash
# The benchmark suite on the first ACTIVE RDMA device, or on Soft-RoCE when there is none.
# Until the Rust benchmarks land (issue: the paper's microbenchmarks), this is a perftest smoke run
# that proves the device path end to end: WRITE and READ bandwidth at 32 B, postlist 1 and 16.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench_scripts/softroce.sh run --timeout "${SUITE_TIMEOUT:-600}" -- bash -c '
  set -e
  run() {  # perftest server and client on this host, one line of results
    local tool=$1; shift
    $tool -d "$RDMA_BENCH_DEVICE" -x "$RDMA_BENCH_GID_INDEX" -F "$@" >/dev/null 2>&1 &
    sleep 1
    $tool -d "$RDMA_BENCH_DEVICE" -x "$RDMA_BENCH_GID_INDEX" -F "$@" 127.0.0.1 2>/dev/null |
      awk -v t="$tool" -v a="$*" "/^ *[0-9]+ +[0-9]+ /{printf \"%-12s %-22s %10s\n\", t, a, \$5}"
    wait
  }
  echo "device $RDMA_BENCH_DEVICE, GID index $RDMA_BENCH_GID_INDEX"
  printf "%-12s %-22s %10s\n" tool flags Mpps
  for l in 1 16; do
    run ib_write_bw -s 32 -l $l -n 20000
    run ib_read_bw -s 32 -l $l -n 20000
  done'
