#!/usr/bin/env bash
# ws-echo, client machine: HRD_REGISTRY_IP=<server> bench_scripts/ws-echo/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine ws-echo "${1:-}" --num-threads 16 --size 24 "${@:2}"
