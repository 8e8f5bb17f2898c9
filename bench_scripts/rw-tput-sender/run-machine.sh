#!/usr/bin/env bash
# rw-tput-sender, client machine: HRD_REGISTRY_IP=<server> bench_scripts/rw-tput-sender/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine rw-tput-sender "${1:-}" --num-threads 1 --dual-port 0 --use-uc 0 "${@:2}"
