#!/usr/bin/env bash
# rw-tput-receiver, server side: bench_scripts/rw-tput-receiver/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers rw-tput-receiver --num-threads 1 --dual-port 0 --use-uc 0 "$@"
