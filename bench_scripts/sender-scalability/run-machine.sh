#!/usr/bin/env bash
# sender-scalability, client machine: HRD_REGISTRY_IP=<server> bench_scripts/sender-scalability/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine sender-scalability "${1:-}" --num-clients 16 --num-threads 8 "${@:2}"
