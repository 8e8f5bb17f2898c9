#!/usr/bin/env bash
# ws-sequencer, server side: bench_scripts/ws-sequencer/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_master_and_workers ws-sequencer --base-port-index 0 --num-server-ports 1 --postlist 32 "$@"
