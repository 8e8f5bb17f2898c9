#!/usr/bin/env bash
# rw-tput-receiver, client machine: HRD_REGISTRY_IP=<server> bench_scripts/rw-tput-receiver/run-machine.sh <machine-id> [extra flags]
source "$(dirname "$0")/../lib/roles.sh"
run_machine rw-tput-receiver "${1:-}" --num-threads 1 --dual-port 0 --use-uc 0 --size 32 --postlist 16 --do-read 0 "${@:2}"
