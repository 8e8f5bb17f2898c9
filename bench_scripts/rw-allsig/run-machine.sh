#!/usr/bin/env bash
# rw-allsig, client machine: HRD_REGISTRY_IP=<server> bench_scripts/rw-allsig/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine rw-allsig "${1:-}" --num-threads 1 --dual-port 0 --use-uc 0 --size 8 --window 64 "${@:2}"
