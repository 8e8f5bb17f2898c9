#!/usr/bin/env bash
# ws-echo, server side: bench_scripts/ws-echo/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_master_and_workers ws-echo --size 24 --postlist 32 "$@"
