#!/usr/bin/env bash
# HERD, server side (as the original's herd/run-servers.sh): a registry, the master (request
# region, the clients' QPs), then the worker process.
#   bench_scripts/herd/run-servers.sh [extra flags, e.g. --num-workers 12 --num-clients 70 --duration 10]
# Every process of a run needs the same --num-workers, --num-clients, --window and --num-keys.
source "$(dirname "$0")/../lib/roles.sh"
run_master_and_workers herd --postlist 32 "$@"
