#!/usr/bin/env bash
# Sweeps rc-swarm over a parameter file's grid, as the original's sweep.sh, and writes the
# original's sweep-file shape (a #define block per point, then one "Machine <i> average: <x> M/s"
# line per machine: diff it against rc-swarm/sweep/* of the original) plus a CSV beside it.
#
#   bench_scripts/rc-swarm/sweep.sh PARAMS HOSTS_FILE [rc-swarm flags...]   (run-all.sh over ssh)
#   bench_scripts/rc-swarm/sweep.sh PARAMS --local N [rc-swarm flags...]    (N processes here)
#
# PARAMS: a bench_scripts/rc-swarm/sweeps/*.conf file (bash): scalars SIZE DO_READ USE_UC ALLSIG
# MAX_INLINE DESCRIPTION, arrays THREADS VMS_PER_PROCESS WINDOW_SIZE UNSIG_BATCH (the grid).
# Each point runs SWEEP_DURATION seconds (default 20); --sq-depth is max(32, 2 x unsig batch,
# window) unless given. Output: SWEEP_OUT.txt and SWEEP_OUT.csv (default
# ./rc-swarm-out/sweep-<params>-<time>).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
case $1 in -h | --help) usage; exit 0 ;; esac
params=$1; shift
[ -r "$params" ] || { echo "sweep.sh: cannot read parameter file '$params'" >&2; exit 2; }
name=$(basename "$params" .conf)
export SWEEP_OUT=${SWEEP_OUT:-./rc-swarm-out/sweep-$name-$(date +%Y%m%d-%H%M%S)}
if [ "$1" = --local ]; then
  machines=${2:-}
  [[ $machines =~ ^[0-9]+$ ]] && [ "$machines" -ge 2 ] || { echo "sweep.sh: --local needs a process count of at least 2" >&2; exit 2; }
  shift 2
  launch=(local)
  # One testbed boot for the whole sweep when this host has no RDMA device; the output's
  # directory is shared with the guest, so the results outlive it.
  source "$here/../lib/testbed.sh"
  on_device "${SWEEP_TIMEOUT:-7200}" "$(dirname "$SWEEP_OUT")" "$0" "$params" --local "$machines" "$@"
else
  hosts=$1; shift
  [ -r "$hosts" ] || { echo "sweep.sh: cannot read hosts file '$hosts'" >&2; exit 2; }
  machines=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$hosts" | grep -c -v '^$')
  launch=(hosts "$hosts")
fi
extra=("$@")

SIZE=32 DO_READ=1 USE_UC=0 ALLSIG=1 MAX_INLINE="" DESCRIPTION=""
THREADS=(14) VMS_PER_PROCESS=(1) WINDOW_SIZE=(16) UNSIG_BATCH=(16)
# shellcheck disable=SC1090
source "$params" || { echo "sweep.sh: $params is not a valid parameter file" >&2; exit 2; }
duration=${SWEEP_DURATION:-20}
out=$SWEEP_OUT
mkdir -p "$(dirname "$out")" || exit 1
txt=$out.txt
csv=$out.csv

{
  echo "Experiment settings:"
  echo "1. Operation type = ${DESCRIPTION:-$SIZE-byte $([ "$DO_READ" = 1 ] && echo read || echo write)}"
  echo "2. $machines machines, VMs per machine = ${VMS_PER_PROCESS[*]}"
  echo "3. Threads = ${THREADS[*]} (rdma-bench rc-swarm, $duration s per point; $(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo
} >"$txt"
echo "size,do_read,use_uc,allsig,unsig_batch,vms_per_process,window_size,threads,machines,num_workers,machine,average_mops,error" >"$csv"

has_flag() { printf '%s\n' "${extra[@]}" | grep -qx -- "$1"; }
points=0 failed=0
for vms in "${VMS_PER_PROCESS[@]}"; do
  for window in "${WINDOW_SIZE[@]}"; do
    for unsig in "${UNSIG_BATCH[@]}"; do
      for threads in "${THREADS[@]}"; do
        points=$((points + 1))
        sq=32
        [ $((2 * unsig)) -gt $sq ] && sq=$((2 * unsig))
        [ "$window" -gt $sq ] && sq=$window
        flags=(--size "$SIZE" --do-read "$DO_READ" --use-uc "$USE_UC" --allsig "$ALLSIG"
          --num-threads "$threads" --vms-per-process "$vms" --window-size "$window"
          --unsig-batch "$unsig" --duration "$duration")
        has_flag --sq-depth || flags+=(--sq-depth "$sq")
        [ -n "$MAX_INLINE" ] && flags+=(--max-inline "$MAX_INLINE")
        workers=$((threads * machines))
        {
          echo "#define SIZE $SIZE"
          echo "#define VM_PER_MACHINE $vms"
          echo "#define WINDOW_SIZE $window"
          echo "#define NUM_WORKERS $workers"
          echo "#define UNSIG_BATCH $unsig"
          echo "#define ALLSIG $ALLSIG"
        } >>"$txt"
        echo "sweep.sh: point $points: vms $vms, window $window, unsig batch $unsig, threads $threads" >&2
        log=$(mktemp)
        if [ "${launch[0]}" = local ]; then
          "$here/../run-local.sh" rc-swarm --num-processes "$machines" "${flags[@]}" "${extra[@]}" >"$log" 2>&1
        else
          RC_SWARM_OUT="$out.d/point-$points" "$here/run-all.sh" "${launch[1]}" "${flags[@]}" "${extra[@]}" >"$log" 2>&1
        fi
        for ((m = 0; m < machines; m++)); do
          avg=$(sed -n "s/^\(\[[a-z0-9]*\] \)\{0,1\}Machine $m average: \([0-9.]*\) M\/s.*/\2/p" "$log" | head -1)
          if [ -n "$avg" ]; then
            echo "Machine $m average: $avg M/s" >>"$txt"
            err=""
          else
            failed=$((failed + 1))
            echo "Machine $m: Error or not enough data" >>"$txt"
            err=$(grep -a -m1 -E "rc-swarm: |run failed|Error" "$log" | sed 's/^\[[a-z0-9]*\] //; s/"/'"'"'/g')
          fi
          echo "$SIZE,$DO_READ,$USE_UC,$ALLSIG,$unsig,$vms,$window,$threads,$machines,$workers,$m,$avg,\"$err\"" >>"$csv"
        done
        rm -f "$log"
      done
    done
  done
done
echo "sweep.sh: $points point(s) x $machines machine(s), $failed without a result: $txt, $csv" >&2
[ $failed = 0 ]
