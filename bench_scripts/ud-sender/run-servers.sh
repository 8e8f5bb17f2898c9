#!/usr/bin/env bash
# ud-sender, server side: bench_scripts/ud-sender/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers ud-sender --num-threads 1 --dual-port 0 --size 32 --postlist 16 "$@"
