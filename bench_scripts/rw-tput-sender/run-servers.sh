#!/usr/bin/env bash
# rw-tput-sender, server side: bench_scripts/rw-tput-sender/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers rw-tput-sender --num-threads 1 --dual-port 0 --use-uc 0 --size 32 --postlist 1 --do-read 1 "$@"
