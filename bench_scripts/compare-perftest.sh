#!/usr/bin/env bash
# Ours against perftest on the same device, in the same boot: each pair alternated A/B REPS times
# (default 5) with the same duration, medians and ratios; then user-space instructions per posted
# op from callgrind. Table on stdout, JSON in target/compare/results.json.
#
# Both post paths are compared like for like: ours --post-api classic (the C suite's linked
# ibv_send_wr + ibv_post_send) against perftest --use_old_post_send, and ours --post-api wr against
# perftest's default ibv_wr_* flow.
# Matched knobs: size 32 B, postlist (-l), send queue depth 128 (-t 128) with as many WRs in flight
# (ours --reap lazy: perftest lets -t WRs fly and reaps when the queue is full; our default, the
# original's eager rule, keeps < 2 x unsig_batch in flight), inline WRITEs up to 60 B (-I 60; where
# perftest disables inline for the device, ours runs with --inline 0 as well), one signaled WR per
# 64 (-Q 64) at postlist 1 and per 16 (-Q 16, --unsig-batch 16) at postlist 16 (perftest requires
# the postlist to be a multiple of its CQ moderation), and 16 outstanding READs (-o 16).
# Every perftest process runs under `timeout`: a client that fails to connect must not leave its
# server waiting forever (seen once under load).
# Not matchable: perftest keeps no registry and stamps every post (tposted) in its bw loops.
#
# Latency: rdma-bench write-lat against ib_write_lat, the same ping-pong on the wire (each side
# spins on the last byte of its receive buffer, then WRITEs back), both reporting t_typical =
# median of half the time between consecutive posts, -n LAT_N iterations (default 20000), size 8.
#
# Tools: rdma-bench's perftest-compatible tools against perftest's own (write-bw at postlist 1
# and 16, read-bw, send-lat), and the user-space instructions per WRITE of write-bw at postlist
# 1 and 16 against ib_write_bw's, same flags on both.
#
# Instructions per op: callgrind counts user-space instructions exactly. Each tool runs N
# operations once; the count is the posting loop's, inclusive of everything it calls in user space
# (the provider's post_send and poll_cq included), divided by N (bench_scripts/lib/callgrind-loop.py
# finds the loop: ours by name, rw-tput-sender's Meter::pump and write-bw's post_side; perftest's
# stripped run_iter_bw as the one function that calls the provider's post_send N / postlist times).
# Startup and teardown stay out of the count, so one run per tool suffices: a whole-program count
# would need two runs and a difference, as its startup varies by ~2 % of a run.
# One extra row shows the original's eager reaping rule at postlist 16, for reference.
#
# The gate (COMPARE_PARTS=gate, what CI runs in its device boot): WRITE 32 B at postlist 1 and 16,
# perftest's ib_write_bw (--use_old_post_send -Q 64|16 -t 128 -I 60) counted once, and against
# that run both of ours: rw-tput-sender with the matched knobs above and write-bw with
# ib_write_bw's own flags. COMPARE_GATE=PCT then fails the script (exit 6) when any row's
# instructions per op exceed perftest's by more than PCT percent; each row's verdict is printed.
#
# Environment: COMPARE_PARTS (default: all but gate); COMPARE_REPS (5) alternated runs per rate
# pair; COMPARE_DURATION (3) seconds per run; COMPARE_N (50000; keep it above 20000, where
# perftest stops stamping posts for its peak, and a multiple of 64) operations under callgrind;
# COMPARE_LAT_N (20000) latency iterations; COMPARE_BIN (target/release, built here first) the
# directory of our binaries, e.g. target/ci, which is then used as it is; COMPARE_GATE (unset) the
# gate's margin in percent; COMPARE_TIMEOUT (2400) bounds the testbed run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"

source "$here/lib/testbed.sh"
[ -n "${COMPARE_BIN:-}" ] || build_outside_testbed --bins
on_device "${COMPARE_TIMEOUT:-2400}" target/compare "$0" "$@"
for t in ib_write_bw ib_read_bw ib_write_lat valgrind memcached python3; do
  command -v $t >/dev/null || { echo "compare-perftest.sh: $t not found (bench_scripts/softroce.sh setup installs it)" >&2; exit 1; }
done

D=${COMPARE_DURATION:-3}
REPS=${COMPARE_REPS:-5}
N=${COMPARE_N:-50000}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -gt 20000 ] && [ $((N % 64)) = 0 ] ||
  { echo "compare-perftest.sh: COMPARE_N must be a multiple of 64 above 20000 (got '$N')" >&2; exit 2; }
LAT_N=${COMPARE_LAT_N:-20000}
PARTS=${COMPARE_PARTS:-tput control lat instr tools tools_instr}  # any subset, e.g. COMPARE_PARTS=instr
out=target/compare
mkdir -p "$out"
raw=$out/raw.txt
: >"$raw"
B=${COMPARE_BIN:-target/release}
[ -x "$B/rdma-bench" ] && [ -x "$B/rw-tput-sender" ] ||
  { echo "compare-perftest.sh: no rdma-bench and rw-tput-sender in $B (COMPARE_BIN)" >&2; exit 2; }
GATE=${COMPARE_GATE:-}
[ -z "$GATE" ] || [[ $GATE =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
  { echo "compare-perftest.sh: COMPARE_GATE must be a margin in percent, e.g. 5 (got '$GATE')" >&2; exit 2; }
dev=$(active_device)
gid=${RDMA_BENCH_GID_INDEX:-}
pt=(-d "$dev" -F)
[ -n "$gid" ] && pt+=(-x "$gid")
ours_dev=(--device "$dev")
[ -n "$gid" ] && ours_dev+=(--gid-index "$gid")

port=$(free_tcp_port)
user=(); [ "$(id -u)" = 0 ] && user=(-u root)
memcached -l 127.0.0.1 -p "$port" -U 0 "${user[@]}" &
mc=$!
trap 'kill $mc 2>/dev/null || true' EXIT
sleep 0.5
reg=(--registry "127.0.0.1:$port")

# ours OP POSTLIST UNSIG [extra...] -> Mops of the active side (duration D)
ours() {
  local read=$1 l=$2 q=$3; shift 3
  $B/rw-tput-sender --is-client 1 "${ours_dev[@]}" "${reg[@]}" --duration 120 >/dev/null 2>&1 &
  local c=$!
  local line
  line=$($B/rw-tput-sender "${ours_dev[@]}" "${reg[@]}" --size 32 --postlist "$l" --unsig-batch "$q" \
    --do-read "$read" --reap lazy --duration "$D" --json "${inline[@]}" "$@" | grep '"summary":true')
  wait $c || true
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["mops"])' "$line"
}

# wait_listening PORT: until a server listens on PORT (at most 60 s): a guest busy with other
# tests can take longer than a second to start one, and a client that finds no server fails.
wait_listening() {
  local i
  for i in $(seq 600); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    sleep 0.1
  done
  echo "compare-perftest.sh: no server listens on port $1 after 60 s" >&2
  return 1
}

# perftest TOOL POSTLIST CQMOD [extra...] -> Mpps (duration D)
perftest() {
  local tool=$1 l=$2 q=$3; shift 3
  timeout 120 $tool "${pt[@]}" -s 32 -l "$l" -Q "$q" -t 128 -D "$D" "$@" >/dev/null 2>&1 &
  local s=$!
  wait_listening "${pt_port[1]:-18515}"
  timeout 120 $tool "${pt[@]}" -s 32 -l "$l" -Q "$q" -t 128 -D "$D" "$@" 127.0.0.1 2>/dev/null |
    awk '/^ *32 +[0-9]+ /{print $5}'
  wait $s || true
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

# perftest turns inline off on devices it does not know to support it (rxe among them: "Device not
# recognized to implement inline feature. Disabling it"). Match it, or WRITE pairs would compare
# the provider's inline copy against its SGE copy.
probe=$( { ib_write_bw "${pt[@]}" -s 32 -I 60 -n 5 >/dev/null 2>&1 & sleep 1; ib_write_bw "${pt[@]}" -s 32 -I 60 -n 5 127.0.0.1 2>&1; wait $!; } || true)
if grep -q "Disabling it" <<<"$probe"; then
  inline=(--inline 0); echo "perftest disables inline on $dev: ours runs WRITEs with --inline 0 too" | tee -a "$raw" >&2
else
  inline=(--inline 1)
fi

declare -A RES
ORDER=()
pair() { # name, our-cmd..., '--', perftest-cmd...
  local name=$1; shift
  local a=() b=() side=a x
  for x in "$@"; do
    if [ "$x" = -- ]; then side=b; continue; fi
    if [ $side = a ]; then a+=("$x"); else b+=("$x"); fi
  done
  local oa=() pb=() i
  for i in $(seq "$REPS"); do
    # ABBA order, so that neither tool always runs right after the other's teardown.
    if ((i % 2)); then
      oa+=("$("${a[@]}")"); pb+=("$("${b[@]}")")
    else
      pb+=("$("${b[@]}")"); oa+=("$("${a[@]}")")
    fi
    echo "$name rep $i: ours ${oa[-1]} perftest ${pb[-1]}" >>"$raw"
  done
  RES[$name]="$(median "${oa[@]}") $(median "${pb[@]}") ${oa[*]} / ${pb[*]}"
  ORDER+=("$name")
  echo "measured $name: ours ${oa[*]} | perftest ${pb[*]}" >&2
}

if [[ " $PARTS " == *" tput "* ]]; then
  # Classic post path on both sides (linked ibv_send_wr + one ibv_post_send, as the C suite).
  old=--use_old_post_send
  pair "WRITE 32B postlist 1, ibv_post_send (Mops)" ours 0 1 64 -- perftest ib_write_bw 1 64 -I 60 $old
  pair "WRITE 32B postlist 16, ibv_post_send (Mops)" ours 0 16 16 -- perftest ib_write_bw 16 16 -I 60 $old
  pair "READ 32B postlist 1, ibv_post_send (Mops)" ours 1 1 64 -- perftest ib_read_bw 1 64 -o 16 $old
  pair "READ 32B postlist 16, ibv_post_send (Mops)" ours 1 16 16 -- perftest ib_read_bw 16 16 -o 16 $old
  # ibv_wr_* path on both sides (perftest's default where the provider has it).
  pair "WRITE 32B postlist 1, ibv_wr_* (Mops)" ours 0 1 64 --post-api wr -- perftest ib_write_bw 1 64 -I 60
  pair "WRITE 32B postlist 16, ibv_wr_* (Mops)" ours 0 16 16 --post-api wr -- perftest ib_write_bw 16 16 -I 60
fi

# Control: perftest against itself through the same pairing, so the table says what ratio this
# boot's noise alone produces (its "ours" column is perftest too).
if [[ " $PARTS " == *" control "* ]]; then
  old=--use_old_post_send
  pair "control: perftest vs perftest, WRITE 32B postlist 1 (Mops)" perftest ib_write_bw 1 64 -I 60 $old -- perftest ib_write_bw 1 64 -I 60 $old
  pair "control: perftest vs perftest, READ 32B postlist 1 (Mops)" perftest ib_read_bw 1 64 -o 16 $old -- perftest ib_read_bw 1 64 -o 16 $old
fi

# perftest's tools against rdma-bench's: the same tool, flags and size, both pairs on this device.
# tool_run IMPL TOOL COLUMN FLAGS...: the client's last table row, column COLUMN (5: MsgRate for a
# BW test, t_typical for a latency test).
tool_run() {
  local impl=$1 tool=$2 col=$3; shift 3
  local cmd=(ib_${tool/-/_} -F)
  [ "$impl" = ours ] && cmd=($B/rdma-bench "$tool")
  local port=$((20000 + RANDOM % 40000)) x=()
  [ -n "$gid" ] && x=(-x "$gid")
  timeout 300 "${cmd[@]}" -d "$dev" "${x[@]}" -p "$port" "$@" >/dev/null 2>&1 &
  local s=$!
  wait_listening "$port"
  timeout 300 "${cmd[@]}" -d "$dev" "${x[@]}" -p "$port" "$@" 127.0.0.1 2>/dev/null |
    awk -v c="$col" '/^ *[0-9]+ +[0-9]+ /{v=$c} END{print v}'
  wait $s || true
}
ours_tool() { tool_run ours "$@"; }
perftest_tool() { tool_run perftest "$@"; }
ours_lat() { tool_run ours write-lat 5 -s 8 -n "$LAT_N"; }
perftest_lat() { tool_run perftest write-lat 5 -s 8 -n "$LAT_N"; }
[[ " $PARTS " == *" lat "* ]] && pair "WRITE 8B ping-pong, t_typical (us)" ours_lat -- perftest_lat
if [[ " $PARTS " == *" tools "* ]]; then
  pair "rdma-bench write-bw -s 32 -l 1 vs ib_write_bw (Mpps)" ours_tool write-bw 5 -s 32 -D "$D" -- perftest_tool write-bw 5 -s 32 -D "$D"
  pair "rdma-bench write-bw -s 32 -l 16 vs ib_write_bw (Mpps)" ours_tool write-bw 5 -s 32 -l 16 -D "$D" -- perftest_tool write-bw 5 -s 32 -l 16 -D "$D"
  pair "rdma-bench read-bw -s 32 vs ib_read_bw (Mpps)" ours_tool read-bw 5 -s 32 -D "$D" -- perftest_tool read-bw 5 -s 32 -D "$D"
  pair "rdma-bench send-lat -s 8 vs ib_send_lat, t_typical (us)" ours_tool send-lat 5 -s 8 -n "$LAT_N" -- perftest_tool send-lat 5 -s 8 -n "$LAT_N"
fi

# Instructions per op (callgrind), WRITE 32 B, postlist 1 and 16.
failed() { # what log: a counted run that failed ends the script (a count of a failed run is no count)
  echo "compare-perftest.sh: under callgrind, $1 failed; its output:" >&2
  tail -5 "$2" >&2
  exit 1
}
loop_ir() { # callgrind-file selector -> the posting loop's inclusive Ir (callgrind-loop.py)
  python3 "$here/lib/callgrind-loop.py" "$@" || exit 1
}
# A counting lane's own names, so that two lanes can count side by side: its files' suffix, its
# pair's run name on the registry, perftest's port. One lane by default.
lane='' run=() pt_port=()
ours_ir() { # postlist unsig iters [extra flags] -> rw-tput-sender's loop Ir
  $B/rw-tput-sender --is-client 1 "${ours_dev[@]}" "${reg[@]}" "${run[@]}" --duration 600 >/dev/null 2>&1 &
  local c=$!
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.ours$lane" $B/rw-tput-sender "${ours_dev[@]}" \
    "${reg[@]}" "${run[@]}" --size 32 --postlist "$1" --unsig-batch "$2" --iters "$3" --hugepages off \
    "${inline[@]}" "${@:4}" >"$out/ours$lane.log" 2>&1 ||
    failed "rw-tput-sender --postlist $1 --iters $3 ${*:4}" "$out/ours$lane.log"
  wait $c || true
  loop_ir "$out/cg.ours$lane" --name '*Meter::pump*' --minus '*Meter::attend*'
}
perftest_ir() { # postlist cqmod iters [extra flags] -> ib_write_bw's loop Ir
  timeout 900 ib_write_bw "${pt[@]}" "${pt_port[@]}" -s 32 -l "$1" -Q "$2" -t 128 -I 60 -n "$3" "${@:4}" \
    >/dev/null 2>&1 &
  local s=$!
  wait_listening "${pt_port[1]:-18515}"
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.perftest$lane" ib_write_bw "${pt[@]}" "${pt_port[@]}" \
    -s 32 -l "$1" -Q "$2" -t 128 -I 60 -n "$3" "${@:4}" 127.0.0.1 >"$out/perftest$lane.log" 2>&1 ||
    failed "ib_write_bw -l $1 -Q $2 -n $3 ${*:4}" "$out/perftest$lane.log"
  wait $s || true
  loop_ir "$out/cg.perftest$lane" --calls $(($3 / $1))
}
per_op() { awk -v ir="$1" -v n="$2" 'BEGIN { printf "%.1f\n", ir / n }'; }
instr_pair() { # name postlist unsig ours-flags... -- perftest-flags...
  local name=$1 l=$2 q=$3; shift 3
  local ox=() px=() side=o x
  for x in "$@"; do
    if [ "$x" = -- ]; then side=p; continue; fi
    if [ $side = o ]; then ox+=("$x"); else px+=("$x"); fi
  done
  local o p
  o=$(ours_ir "$l" "$q" "$N" "${ox[@]}")
  p=$(perftest_ir "$l" "$q" "$N" "${px[@]}")
  echo "callgrind $name: loop Ir ours $o, perftest $p (N $N)" >>"$raw"
  RES[$name]="$(per_op "$o" "$N") $(per_op "$p" "$N") $o / $p"
  ORDER+=("$name")
}
if [[ " $PARTS " == *" instr "* ]]; then
  for l in 1 16; do
    q=$([ $l = 1 ] && echo 64 || echo 16)
    instr_pair "WRITE 32B postlist $l, ibv_post_send (user instr/op)" $l $q --reap lazy -- --use_old_post_send
    instr_pair "WRITE 32B postlist $l, ibv_wr_* (user instr/op)" $l $q --reap lazy --post-api wr --
  done
  instr_pair "WRITE 32B postlist 16, ibv_post_send, ours --reap eager (user instr/op)" 16 16 --reap eager -- --use_old_post_send
fi

# Instructions per op of the perftest-compatible tools: the posting client under callgrind, the
# passive server outside it, N WRITEs (above 20000, so that neither stamps posts for the peak).
tool_ir() { # impl postlist iters [extra flags, both sides] -> the client's loop Ir
  local cmd=(ib_write_bw -F) loop=(--calls $(($3 / $2)))
  [ "$1" = ours ] && cmd=($B/rdma-bench write-bw) loop=(--name '*perf::bw::post_side*')
  local port=$((20000 + RANDOM % 40000)) x=()
  [ -n "$gid" ] && x=(-x "$gid")
  timeout 900 "${cmd[@]}" -d "$dev" "${x[@]}" -p "$port" -s 32 -l "$2" -n "$3" "${@:4}" >/dev/null 2>&1 &
  local s=$!
  wait_listening "$port"
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.tool.$1$lane" "${cmd[@]}" -d "$dev" "${x[@]}" \
    -p "$port" -s 32 -l "$2" -n "$3" "${@:4}" 127.0.0.1 >"$out/tool$lane.log" 2>&1 ||
    failed "${cmd[*]} -l $2 -n $3 ${*:4}" "$out/tool$lane.log"
  wait $s || true
  loop_ir "$out/cg.tool.$1$lane" "${loop[@]}"
}
if [[ " $PARTS " == *" tools_instr "* ]]; then
  for l in 1 16; do
    o=$(tool_ir ours $l "$N"); p=$(tool_ir perftest $l "$N")
    name="rdma-bench write-bw -s 32 -l $l vs ib_write_bw (user instr/op)"
    echo "callgrind $name: loop Ir ours $o, perftest $p (N $N)" >>"$raw"
    RES[$name]="$(per_op "$o" "$N") $(per_op "$p" "$N") $o / $p"
    ORDER+=("$name")
  done
fi

# The gate's two postlists count side by side, one lane each, on the guest's two CPUs: a count
# does not depend on timing as long as the posting side, slowed ~50x by callgrind, finds a
# completion at every poll, which it still does with both lanes running (the counts were the
# same as one lane at a time's).
gate_lane() { # postlist -> "perftest rw-tput-sender write-bw" loop counts, then each run's seconds
  local l=$1 q t0 t1 t2 p r w
  q=$([ "$l" = 1 ] && echo 64 || echo 16)
  lane=.l$l run=(--run-name "gate-l$l") pt_port=(-p $((19600 + l)))
  t0=$SECONDS; p=$(perftest_ir "$l" "$q" "$N" --use_old_post_send)
  t1=$SECONDS; r=$(ours_ir "$l" "$q" "$N" --reap lazy)
  t2=$SECONDS; w=$(tool_ir ours "$l" "$N" -Q "$q" -t 128 -I 60 --use_old_post_send)
  echo "$p $r $w $((t1 - t0)) $((t2 - t1)) $((SECONDS - t2))"
}
if [[ " $PARTS " == *" gate "* ]]; then
  gate_lane 1 >"$out/gate.l1" &
  lane1=$!
  gate_lane 16 >"$out/gate.l16" &
  lane16=$!
  # Both lanes are waited for before a failed one ends the script: none is left counting.
  lanes_ok=1
  wait $lane1 || lanes_ok=0
  wait $lane16 || lanes_ok=0
  [ $lanes_ok = 1 ] || exit 1
  for l in 1 16; do
    q=$([ $l = 1 ] && echo 64 || echo 16)
    read -r p r w tp tr tw <"$out/gate.l$l"
    perftest_per_op=$(per_op "$p" "$N")
    name="rw-tput-sender WRITE 32B postlist $l vs ib_write_bw (user instr/op)"
    RES[$name]="$(per_op "$r" "$N") $perftest_per_op $r / $p"
    ORDER+=("$name")
    name="rdma-bench write-bw -s 32 -l $l -Q $q vs ib_write_bw (user instr/op)"
    RES[$name]="$(per_op "$w" "$N") $perftest_per_op $w / $p"
    ORDER+=("$name")
    echo "callgrind gate postlist $l: loop Ir rw-tput-sender $r, write-bw $w, perftest $p (N $N;" \
      "runs of $tr, $tw and $tp s)" >>"$raw"
  done
fi

# One row per pair: name, our median, perftest's median, and the individual runs.
: >"$out/pairs.tsv"
for k in "${ORDER[@]}"; do printf '%s\t%s\n' "$k" "${RES[$k]}" >>"$out/pairs.tsv"; done
python3 - "$out" "$dev" "$D" "$REPS" "$N" "$LAT_N" "$GATE" <<'PY'
import json, sys
out, dev, dur, reps, n, lat_n, gate = sys.argv[1:]
rows = []
for line in open(f"{out}/pairs.tsv"):
    name, rest = line.rstrip("\n").split("\t")
    ours, theirs, runs = rest.split(" ", 2)
    ours, theirs = float(ours), float(theirs)
    lower_is_better = "(us)" in name or "instr" in name
    ratio = ours / theirs if theirs else float("nan")
    # How much perftest varies against itself in this boot: the noise a ratio has to be read in.
    spread = None
    if "instr" not in name:
        theirs_runs = [float(x) for x in runs.split(" / ")[1].split()]
        spread = round(max(theirs_runs) / min(theirs_runs), 2)
    rows.append({"pair": name, "ours": ours, "perftest": theirs, "ratio": round(ratio, 3),
                 "better_is": "lower" if lower_is_better else "higher", "perftest_spread": spread,
                 "runs": runs})
w = max(len(r["pair"]) for r in rows)
print(f"{'pair':<{w}}  {'ours':>10}  {'perftest':>10}  {'ratio':>6}  {'perftest max/min':>16}")
for r in rows:
    sp = f"{r['perftest_spread']:.2f}" if r["perftest_spread"] else "exact"
    print(f"{r['pair']:<{w}}  {r['ours']:>10.4g}  {r['perftest']:>10.4g}  {r['ratio']:>6.3f}  {sp:>16}")
meta = {"device": dev, "duration_s": float(dur), "reps": int(reps), "callgrind_ops": int(n),
        "latency_iters": int(lat_n)}
json.dump({"meta": meta, "pairs": rows}, open(f"{out}/results.json", "w"), indent=1)
print(f"(ratio = ours / perftest; medians of {reps} alternated runs of {dur} s on {dev}; JSON: {out}/results.json)")
if gate:
    limit = 1 + float(gate) / 100
    over = []
    for r in rows:
        if "instr" not in r["pair"]:
            continue
        ok = r["ours"] <= r["perftest"] * limit
        print(f"gate: {r['pair']}: ours {r['ours']:.1f} against perftest's {r['perftest']:.1f} x {limit:g} = "
              f"{r['perftest'] * limit:.1f}: {'ok' if ok else 'EXCEEDED'}")
        if not ok:
            over.append(r["pair"])
    if over:
        print(f"compare-perftest.sh: the gate failed: {len(over)} row(s) cost more than perftest + {gate} %", file=sys.stderr)
        sys.exit(6)
PY
