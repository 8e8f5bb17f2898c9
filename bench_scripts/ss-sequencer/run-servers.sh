#!/usr/bin/env bash
# ss-sequencer, server side: bench_scripts/ss-sequencer/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers ss-sequencer --dual-port 0 --postlist 32 "$@"
