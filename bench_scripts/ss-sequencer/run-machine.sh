#!/usr/bin/env bash
# ss-sequencer, client machine: HRD_REGISTRY_IP=<server> bench_scripts/ss-sequencer/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine ss-sequencer "${1:-}" --num-threads 14 --dual-port 0 --postlist 16 "${@:2}"
