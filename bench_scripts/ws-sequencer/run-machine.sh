#!/usr/bin/env bash
# ws-sequencer, client machine: HRD_REGISTRY_IP=<server> bench_scripts/ws-sequencer/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine ws-sequencer "${1:-}" --num-threads 14 --base-port-index 0 --num-server-ports 1 --num-client-ports 1 "${@:2}"
