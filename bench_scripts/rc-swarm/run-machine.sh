#!/usr/bin/env bash
# One rc-swarm process by hand (the original's run-servers.sh): process 0 also starts the
# registry when none answers at HRD_REGISTRY_IP; the others point HRD_REGISTRY_IP at process 0's
# host. Start one per machine with the same flags:
#
#   bench_scripts/rc-swarm/run-machine.sh PROCESS_ID NUM_PROCESSES [rc-swarm flags...]
source "$(dirname "$0")/../lib/roles.sh"
[[ ${1:-} =~ ^[0-9]+$ && ${2:-} =~ ^[0-9]+$ ]] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
id=$1 n=$2
shift 2
if [ "$id" = 0 ]; then
  run_servers rc-swarm --process-id "$id" --num-processes "$n" "$@"
else
  need_bin rc-swarm
  export HRD_REGISTRY_IP=${HRD_REGISTRY_IP:-127.0.0.1}
  # shellcheck disable=SC2046
  $(numa_prefix "$@") "$bin_dir/rc-swarm" --process-id "$id" --num-processes "$n" "$@"
fi
