#!/usr/bin/env bash
# ud-receiver, server side: bench_scripts/ud-receiver/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers ud-receiver --num-threads 1 --dual-port 0 --size 32 --postlist 16 "$@"
