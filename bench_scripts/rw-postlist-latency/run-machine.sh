#!/usr/bin/env bash
# rw-postlist-latency, client machine: HRD_REGISTRY_IP=<server> bench_scripts/rw-postlist-latency/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine rw-postlist-latency "${1:-}" --num-threads 1 --dual-port 0 --use-uc 0 --size 32 --postlist 1 "${@:2}"
