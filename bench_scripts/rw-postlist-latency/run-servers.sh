#!/usr/bin/env bash
# rw-postlist-latency, server side: bench_scripts/rw-postlist-latency/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers rw-postlist-latency --num-threads 1 --dual-port 0 --use-uc 0 --size 32 --postlist 1 --do-read 0 "$@"
