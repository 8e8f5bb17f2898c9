#!/usr/bin/env bash
# ss-echo, client machine: HRD_REGISTRY_IP=<server> bench_scripts/ss-echo/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine ss-echo "${1:-}" --num-threads 14 --num-server-threads 10 --dual-port 0 --size 32 --postlist 16 "${@:2}"
