#!/usr/bin/env bash
# ud-receiver, client machine: HRD_REGISTRY_IP=<server> bench_scripts/ud-receiver/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine ud-receiver "${1:-}" --num-threads 1 --dual-port 0 --size 32 --postlist 16 "${@:2}"
