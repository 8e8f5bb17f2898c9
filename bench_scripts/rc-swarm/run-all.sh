#!/usr/bin/env bash
# Runs rc-swarm on every host of HOSTS_FILE over ssh (process i on line i), with a registry on
# the first host, and prints each machine's average; every process is stopped at the end, after
# a failure and on Ctrl-C.
#
#   bench_scripts/rc-swarm/run-all.sh HOSTS_FILE [rc-swarm flags...]
#   bench_scripts/rc-swarm/run-all.sh hosts --num-threads 14 --vms-per-process 2 --duration 60
#
# HOSTS_FILE: one ssh destination per line ([user@]host; # comments). The hosts must reach each
# other at these names (the first one's name is the registry's address) and have this checkout at
# the same path (RC_SWARM_DIR overrides it), built (cargo build --release; RDMA_BENCH_BIN_DIR
# names another build's directory, the same on every host), with memcached on the first host. Flags go to every process; --duration defaults to 30 s. Outputs land in
# RC_SWARM_OUT (default ./rc-swarm-out/<time>/machine-<i>.log) and live on the terminal.
# The hosts' login shell must be bash. Environment: RC_SWARM_SSH (default "ssh -o BatchMode=yes"),
# RC_SWARM_REGISTRY_PORT (11311: not 11211, where a distribution's memcached listens on localhost only),
# RC_SWARM_TIMEOUT (seconds on top of the duration and connect timeout before the run is killed).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
hosts_file=$1; shift
[ -r "$hosts_file" ] || { echo "run-all.sh: cannot read hosts file '$hosts_file'" >&2; exit 2; }
mapfile -t hosts < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$hosts_file" | grep -v '^$')
n=${#hosts[@]}
[ "$n" -ge 2 ] || { echo "run-all.sh: $hosts_file names $n host(s); rc-swarm needs at least 2" >&2; exit 2; }

read -r -a ssh <<<"${RC_SWARM_SSH:-ssh -o BatchMode=yes -o ConnectTimeout=10}"
dir=${RC_SWARM_DIR:-$root}
bin=${RDMA_BENCH_BIN_DIR:-$dir/target/release}/rc-swarm
mc_port=${RC_SWARM_REGISTRY_PORT:-11311}
registry_host=${hosts[0]#*@}
out=${RC_SWARM_OUT:-./rc-swarm-out/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 1
run_name="rc-swarm-$(date +%s)-$$"

flags=("$@")
duration=30
connect_timeout=60
for ((i = 0; i < ${#flags[@]}; i++)); do
  case ${flags[i]} in
    --duration) duration=${flags[i + 1]:-} ;;
    --duration=*) duration=${flags[i]#*=} ;;
    --connect-timeout | --connect_timeout) connect_timeout=${flags[i + 1]:-} ;;
    --connect-timeout=* | --connect_timeout=*) connect_timeout=${flags[i]#*=} ;;
    --process-id | --process_id | --num-processes | --num_processes | --registry | --run-name)
      echo "run-all.sh: ${flags[i]} is set by run-all.sh itself" >&2; exit 2 ;;
  esac
done
printf '%s\n' " ${flags[*]} " | grep -q -- ' --duration' || flags+=(--duration "$duration")
[[ $duration =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "run-all.sh: --duration must be a number of seconds" >&2; exit 2; }
bound=$(awk "BEGIN { print int($duration + $connect_timeout + ${RC_SWARM_TIMEOUT:-30}) }")

on() { local h=$1; shift; "${ssh[@]}" "$h" "$@"; }
q() { printf '%q ' "$@"; }

pids=()
mc_pid=""
stopped=0
# Stops every process of this run on every host (by its unique run name), then the registry.
stop_all() {
  [ $stopped = 1 ] && return
  stopped=1
  local h
  # Anchored on the binary (not the ssh or timeout clients of this launcher, which may run on a
  # listed host); [n] keeps the pattern from matching the remote shell that runs pkill. A process
  # gets 12 s to drain and wait for its peers before it is killed.
  local pat="^[^ ]*/rc-swarm .*--run-[n]ame $run_name"
  for h in "${hosts[@]}"; do
    on "$h" "pkill -INT -f -- '$pat'; for i in \$(seq 24); do pgrep -f -- '$pat' >/dev/null || exit 0; sleep 0.5; done; pkill -KILL -f -- '$pat'; true" </dev/null >/dev/null 2>&1 &
  done
  wait "${pids[@]}" 2>/dev/null
  wait
  if [ -n "$mc_pid" ]; then
    on "${hosts[0]}" "kill $mc_pid; true" </dev/null >/dev/null 2>&1
  fi
}
trap 'echo "run-all.sh: interrupted: stopping every host" >&2; stop_all; exit 130' INT TERM
trap stop_all EXIT

# The registry: reuse one that answers at the first host's address (what every host will use),
# else start memcached there.
if on "${hosts[0]}" "(exec 3<>/dev/tcp/$registry_host/$mc_port) 2>/dev/null" </dev/null; then
  echo "run-all.sh: registry answers at $registry_host:$mc_port (stale entries are told apart by run id)"
else
  mc_pid=$(on "${hosts[0]}" "command -v memcached >/dev/null || { echo 'memcached is not installed on ${hosts[0]}' >&2; exit 1; }
    nohup memcached -l 0.0.0.0 -p $mc_port -u root -c 4096 >/dev/null 2>&1 </dev/null &
    pid=\$!
    for i in \$(seq 50); do (exec 3<>/dev/tcp/$registry_host/$mc_port) 2>/dev/null && { echo \$pid; exit 0; }; sleep 0.1; done; exit 1" </dev/null) ||
    { echo "run-all.sh: could not start memcached on ${hosts[0]}" >&2; exit 1; }
  echo "run-all.sh: started memcached on ${hosts[0]}:$mc_port"
fi

echo "run-all.sh: $n processes, run name $run_name, output in $out"
for ((i = 0; i < n; i++)); do
  remote="cd $(q "$dir") && exec env HRD_REGISTRY_IP=$(q "$registry_host:$mc_port") $(q "$bin") $(q "${flags[@]}") --process-id $i --num-processes $n --registry $(q "$registry_host:$mc_port") --run-name $run_name"
  # shellcheck disable=SC2094
  timeout -k 5 "$bound" "${ssh[@]}" "${hosts[i]}" "$remote" </dev/null > >(tee "$out/machine-$i.log" | sed -u "s/^/[machine$i] /") 2>&1 &
  pids+=($!)
done

rc=0
failed=()
for ((i = 0; i < n; i++)); do
  if ! wait "${pids[i]}"; then rc=1; failed+=("$i"); fi
done
stop_all
sleep 0.2

echo "Performance (run-all.sh, ${flags[*]}):"
for ((i = 0; i < n; i++)); do
  line=$(grep -a -m1 "^Machine $i average:" "$out/machine-$i.log" || true)
  if [ -n "$line" ]; then
    echo "$line"
  else
    why=$(grep -a -i -m1 -E 'error|failed|lost|rc-swarm:' "$out/machine-$i.log" || true)
    echo "Machine $i: Error? (${why:-no output}) or not enough data"
  fi
done
[ $rc = 0 ] || echo "run-all.sh: machine(s) ${failed[*]} failed (logs in $out)" >&2
exit $rc
