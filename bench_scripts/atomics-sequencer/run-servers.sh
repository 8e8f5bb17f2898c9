#!/usr/bin/env bash
# atomics-sequencer, server side: bench_scripts/atomics-sequencer/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers atomics-sequencer --base-port-index 0 --num-server-ports 1 "$@"
