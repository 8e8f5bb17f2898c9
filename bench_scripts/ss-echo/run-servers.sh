#!/usr/bin/env bash
# ss-echo, server side: bench_scripts/ss-echo/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers ss-echo --num-server-threads 10 --dual-port 0 --size 32 --postlist 16 "$@"
