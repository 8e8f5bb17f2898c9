#!/usr/bin/env bash
# atomics-sequencer, client machine: HRD_REGISTRY_IP=<server> bench_scripts/atomics-sequencer/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine atomics-sequencer "${1:-}" --num-threads 8 --base-port-index 0 --num-server-ports 1 --num-client-ports 1 --postlist 16 "${@:2}"
