#!/usr/bin/env bash
# HERD, client machine i (as the original's herd/run-machine.sh: 14 client threads each):
#   HRD_REGISTRY_IP=<server> bench_scripts/herd/run-machine.sh <machine-id> [extra flags]
# e.g. --update-percentage 5 --zipf 0.99; clients of all machines together are --num-clients.
source "$(dirname "$0")/../lib/roles.sh"
run_machine herd "${1:-}" --num-threads 14 --update-percentage 0 "${@:2}"
