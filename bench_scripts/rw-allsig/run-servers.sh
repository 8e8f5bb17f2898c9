#!/usr/bin/env bash
# rw-allsig, server side: bench_scripts/rw-allsig/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers rw-allsig --num-threads 1 --dual-port 0 --use-uc 0 --size 8 --window 64 --do-read 1 "$@"
