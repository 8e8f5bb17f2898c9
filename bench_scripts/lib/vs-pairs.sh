# vs-pairs.sh — the matched pairs of `vs-original.sh SRC_DIR`: for each benchmark, ours and the
# original's command lines at the original's run-script defaults (scaled to one host), and which
# side of each is measured. Sourced by vs-original.sh (set -euo pipefail).

# Every pair, in the order the table prints them.
ALL_PAIRS="rw-tput-sender-write-pl1 rw-tput-sender-write-pl16 rw-tput-sender-read-pl1
rw-tput-sender-read-pl16 rw-tput-receiver ud-sender ud-receiver ss-echo atomics-sequencer
atomics-sequencer-drtm"

# The benchmarks no pair covers, with the reason the table prints for each.
declare -A UNPAIRED=(
  [sender-scalability]="the original's 16 client QPs are spread over 2 client machines (kAppNumClientMachines) and it runs for --run_time, not in reports: not paired yet"
  [rc-swarm]="the original's static_assert(kHrdMaxInline == 16) fails with the patch's 60-byte inline limit, and it runs as N processes of a config file: not paired yet"
  [rw-allsig]="not in the original's current tree (paper-era libhrd in C, Mellanox OFED's ibv_exp_* verbs): not paired"
  [rw-postlist-latency]="not in the original's current tree (paper-era libhrd in C): not paired"
  [ss-sequencer]="not in the original's current tree (paper-era libhrd in C): not paired"
  [ws-sequencer]="not in the original's current tree (paper-era libhrd in C): not paired"
  [ws-echo]="not in the original's current tree (paper-era libhrd in C): not paired"
  [ww-echo]="not in the original's current tree (paper-era libhrd in C): not paired"
  [herd]="not in the original's current tree (herd/ is the paper-era HERD on libhrd in C); the store alone: vs-original.sh --store"
)

# The originals built for the pairs (atomics-sequencer twice: its workload is compile-time).
ORIGINAL_BINS="rw-tput-sender rw-tput-receiver ud-sender ud-receiver ss-echo atomics-sequencer-counter atomics-sequencer-drtm"

# pair NAME: sets, for one pair,
#   ours_bin, ours_flags   our binary and its flags (every role gets them; clients --is-client 1)
#   ours_side              the role whose `main: <Role> 0: X IOPS` lines are its rate
#   orig_bin               the original's binary (in $bin)
#   orig_server, orig_client   the original's flags per role
#   orig_side              server or client: the role whose reports are its rate
# Returns 1 for an unknown name.
pair() {
  local srv1="--num_threads 1 --dual_port 0" rd
  case $1 in
    rw-tput-sender-*-pl*)
      local op=${1#rw-tput-sender-} pl=${1##*-pl}
      op=${op%-pl*}
      case $op in write) rd=0 ;; read) rd=1 ;; *) return 1 ;; esac
      [[ $pl =~ ^[0-9]+$ ]] || return 1
      ours_bin=rw-tput-sender ours_flags="--size 32 --postlist $pl --do-read $rd" ours_side=server
      orig_bin=rw-tput-sender orig_side=server
      orig_server="$srv1 --use_uc 0 --is_client 0 --size 32 --postlist $pl --do_read $rd"
      orig_client="$srv1 --use_uc 0 --is_client 1 --machine_id 0"
      ;;
    rw-tput-receiver) # run-machine.sh: 32-byte WRITEs, postlist 4
      ours_bin=rw-tput-receiver ours_flags="--size 32 --postlist 4" ours_side=client
      orig_bin=rw-tput-receiver orig_side=client
      orig_server="$srv1 --use_uc 0 --is_client 0"
      orig_client="$srv1 --use_uc 0 --is_client 1 --machine_id 0 --size 32 --postlist 4 --do_read 0"
      ;;
    ud-sender) # run-servers.sh: 16-byte SENDs, postlist 16, one client (kAppNumClients)
      ours_bin=ud-sender ours_flags="--size 16 --postlist 16 --num-clients 1" ours_side=server
      orig_bin=ud-sender orig_side=server
      orig_server="$srv1 --is_client 0 --size 16 --postlist 16"
      orig_client="$srv1 --is_client 1 --machine_id 0"
      ;;
    ud-receiver) # the server's inbound rate: 32-byte SENDs, postlist 16
      ours_bin=ud-receiver ours_flags="--size 32 --postlist 16" ours_side=server
      orig_bin=ud-receiver orig_side=server
      orig_server="$srv1 --is_client 0 --size 32 --postlist 16"
      orig_client="$srv1 --postlist 16 --is_client 1 --size 32 --machine_id 0"
      ;;
    ss-echo) # the server's replies: one server thread, one client thread, postlist 16
      ours_bin=ss-echo ours_flags="--num-server-threads 1 --max-num-clients 1 --postlist 16 --size 32" ours_side=server
      orig_bin=ss-echo orig_side=server
      orig_server="--num_server_threads 1 --dual_port 0 --is_client 0 --size 32 --postlist 16"
      orig_client="--num_client_threads 1 --num_server_threads 1 --dual_port 0 --postlist 16 --is_client 1 --size 32 --machine_id 0"
      ;;
    atomics-sequencer | atomics-sequencer-drtm)
      # One client thread (kAppNumClients 1, built so), two QPs, one port on each side.
      # atomics-sequencer: the sequencer, every FETCH_AND_ADD on counter 0 (kAppEmulateDrTM
      # false, kAppUseRandom false, 8-byte stride, a 4 KiB buffer). -drtm: the original's
      # default DrTM-KV mix (10 % PUTs as two atomics, GETs as 64-byte READs) on 16 MiB
      # instead of 1 GiB, which a testbed guest cannot hold.
      ours_bin=atomics-sequencer ours_side=client
      if [ "$1" = atomics-sequencer ]; then
        ours_flags="--num-clients 1 --postlist 16 --emulate-drtm 0 --use-random 0 --stride 8 --buf-size 4096"
        orig_bin=atomics-sequencer-counter
      else
        ours_flags="--num-clients 1 --postlist 16 --buf-size 16777216"
        orig_bin=atomics-sequencer-drtm
      fi
      orig_side=client
      orig_server="--base_port_index 0 --num_server_ports 1 --is_client 0"
      orig_client="--num_threads 1 --base_port_index 0 --num_server_ports 1 --num_client_ports 1 --postlist 16 --is_client 1 --machine_id 0"
      ;;
    *) return 1 ;;
  esac
}

# build_atomics_variants SRC CMAKE_DIR BIN: the original's atomics-sequencer takes its workload
# from atomics-sequencer/main.h's constants: build it once per pair's constants (sed on the copy).
build_atomics_variants() {
  local src=$1 cm=$2 out=$3 h=$1/atomics-sequencer/main.h
  cp "$h" "$h.orig"
  local common='s/kAppNumClients = [0-9]*;/kAppNumClients = 1;/'
  sed -e "$common" -e 's/kAppBufSize = ([^;]*;/kAppBufSize = (16 * 1024 * 1024);/' "$h.orig" >"$h"
  make -C "$cm" atomics-sequencer >>"$cm/../build.log" 2>&1 && cp "$src/build/atomics-sequencer" "$out/atomics-sequencer-drtm"
  sed -e "$common" -e 's/kAppEmulateDrTM = true;/kAppEmulateDrTM = false;/' \
    -e 's/kAppUpdatePercentage = [0-9]*;/kAppUpdatePercentage = 100;/' \
    -e 's/kAppBufSize = ([^;]*;/kAppBufSize = 4096;/' \
    -e 's/kAppUseRandom = true;/kAppUseRandom = false;/' \
    -e 's/kAppStrideSize = [0-9]*;/kAppStrideSize = 8;/' "$h.orig" >"$h"
  make -C "$cm" atomics-sequencer >>"$cm/../build.log" 2>&1 && cp "$src/build/atomics-sequencer" "$out/atomics-sequencer-counter"
  mv "$h.orig" "$h"
}

# stamp: each line of stdin with the time it arrived (seconds, microsecond resolution) in front,
# without libhrd's colour codes.
# The original's reports are timed by their arrival: each comes after exactly HRD_REPORT_OPS
# operations (a multiple of every postlist), and its own printed rate has two decimals only
# (0.04 M/s on Soft-RoCE) or, in atomics-sequencer, a wrong divisor.
stamp() {
  local l
  while IFS= read -r l; do
    l=${l//$'\e['[0-9]m/}
    printf '%s %s\n' "$EPOCHREALTIME" "${l//$'\e['[0-9][0-9]m/}"
  done
}

# orig_rates FILE SIDE OPS: the rates (Mops) between consecutive reports of SIDE's thread 0
# (Server or Client) in FILE, a stamped log of reports OPS operations apart, one per line.
orig_rates() {
  { grep -a "main: $2 0: [0-9]" "$1" || true; } |
    awk -v n="$3" '{ if (NR > 1 && $1 > t) print n / ($1 - t) / 1e6; t = $1 }'
}

# ours_rates FILE SIDE: the same for our run-local.sh output (`[server] main: Server 0: X IOPS`).
ours_rates() {
  local role=${2,,}
  { grep -a "^\[$role\] main: $2 0: [0-9.]* IOPS" "$1" || true; } | awk '{ print $5 / 1e6 }'
}

# steady: the median of a run's rates after the first (which spans the ramp-up), as %.4g
steady() {
  awk '{ v[NR] = $1 } END { for (i = (NR > 2 ? 2 : 1); i <= NR; i++) print v[i] }' | median |
    awk '{ if ($1 == "-") print ""; else printf "%.4g\n", $1 }'
}
