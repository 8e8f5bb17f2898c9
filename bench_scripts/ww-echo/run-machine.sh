#!/usr/bin/env bash
# ww-echo, client machine: HRD_REGISTRY_IP=<server> bench_scripts/ww-echo/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine ww-echo "${1:-}" --num-threads 4 --dual-port 0 --use-uc 1 --size 28 --window 64 "${@:2}"
