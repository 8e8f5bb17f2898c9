#!/usr/bin/env bash
# ww-echo, server side: bench_scripts/ww-echo/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers ww-echo --num-threads 16 --dual-port 0 --use-uc 1 --size 28 --window 64 "$@"
