#!/usr/bin/env bash
# sender-scalability, server side: bench_scripts/sender-scalability/run-servers.sh [extra flags, e.g. --duration 10]
source "$(dirname "$0")/../lib/roles.sh"
run_servers sender-scalability --num-threads 1 --num-clients 16 --size 32 --do-read 0 "$@"
