#!/usr/bin/env bash
# The benchmark suite: a short run of each of the paper's microbenchmarks, rdma-bench write-lat, and the
# paper's sequencers, echo servers, rc-swarm and HERD on the first ACTIVE RDMA device (Soft-RoCE through
# softroce.sh when there is none), then a table: benchmark, role, op, size, postlist, Mops (also
# target/suite/results.csv), a plot of it (target/suite/suite.svg) and the doctor's verdict on the
# host. Each run lasts SUITE_DURATION seconds (default 3). Full logs go to
# target/suite/<n>-<bench>.log. SUITE_ONLY=<bench> runs just that benchmark's lines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"

source "$here/lib/testbed.sh"
build_outside_testbed --bins
# The logs directory is shared with the guest, so they survive it.
on_device "${SUITE_TIMEOUT:-900}" target/suite "$0" "$@"

d=${SUITE_DURATION:-3}
out=target/suite
mkdir -p "$out"
rm -f "$out"/*.log "$out"/*.flags
bin=${RDMA_BENCH_BIN_DIR:-$root/target/release}/rdma-bench
# The suite's rows come from the benchmarks' descriptors (`rdma-bench list --suite`): each
# microbenchmark, write-lat, the applications scaled to one host (one server thread or worker
# and one client thread), rc-swarm (two processes with two emulated VMs each) and HERD with a
# store that fits the testbed (64 Ki keys) at 0, 5 and 50 % PUTs.
mapfile -t suite < <("$bin" list --suite)
[ ${#suite[@]} -gt 0 ] || { echo "run-suite.sh: $bin list --suite gave no rows" >&2; exit 1; }
echo "device ${RDMA_BENCH_DEVICE:-$(ls /sys/class/infiniband | head -1)}, ${d}s per run"
rc=0
n=0
for run in "${suite[@]}"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  set -- $run
  bench=$1; shift
  [ -z "${SUITE_ONLY:-}" ] || [ "$SUITE_ONLY" = "$bench" ] || continue
  log=$out/$n-$bench.log
  echo "$*" >"$out/$n-$bench.flags"
  if ! "$here/run-local.sh" "$bench" "$@" --duration "$d" --json >"$log" 2>&1; then
    echo "$bench $*: FAILED (see $log)" >&2
    rc=1
  fi
done
python3 - "$out" "${#suite[@]}" <<'PY'
import csv, glob, json, os, sys
out, count = sys.argv[1], int(sys.argv[2])
# The table again, as CSV for `rdma-bench plot` and spreadsheets (empty cell: not measured).
results = csv.writer(open(os.path.join(out, "results.csv"), "w", newline=""), lineterminator="\n")
# trusted: 1 when the run's counters vouch for it, 0 when they made it questionable (marked ?).
results.writerow(["bench", "role", "op", "size", "postlist", "mops", "lat_avg_us", "lat_median_us", "lat_p99_us", "flags", "trusted"])
questionable = False
print(f"{'benchmark':<21} {'role':<7} {'op':<9} {'size':>5} {'postlist':>8} {'Mops':>9}  {'latency (avg/median/p99 us)':<28} flags")
for n in range(1, count + 1):
    for log in sorted(glob.glob(os.path.join(out, f"{n}-*.log"))):
        lat = {}
        rows = []
        # The run's other flags (size and postlist have columns of their own).
        words = open(log[:-4] + ".flags").read().split()
        extra = " ".join(f"{k} {v}" for k, v in zip(words[::2], words[1::2]) if k not in ("--size", "--postlist"))
        for line in open(log):
            role, _, body = line.strip().rpartition("] ")
            if not body.startswith("{"):
                continue
            o = json.loads(body)
            if "test_info" in o:
                # rdma-bench's perftest-compatible tools: perftest's JSON, one per side.
                r, info = o["results"], o["test_info"]
                rl = role.lstrip("[").lower()
                if "t_typical" in r:
                    lat[rl] = {"average_us": r["t_avg"], "median_us": r["t_typical"], "p99_us": r["percentile_99"]}
                    mops = 1 / (2 * r["t_avg"]) if r["t_avg"] else 0.0
                else:
                    mops = r["MsgRate"]
                op = info["test"].split("_")[1].upper() if info["test"].startswith("RDMA") else info["test"].split("_")[0].upper()
                rows.append({"bench": "rdma-bench " + os.path.basename(log)[:-4].split("-", 1)[1], "role": rl, "op": op,
                             "size": r["MsgSize"], "postlist": info.get("Post_List", 1), "mops": mops,
                             "trusted": o.get("trusted")})
            elif o.get("latency"):
                # rw-postlist-latency's keys; one per role.
                lat[o.get("role", role.lstrip("[").lower())] = o
            elif o.get("summary") and not o.get("passive"):
                rows.append(o)
        for o in rows:
            v = lat.get(o["role"]) or next(iter(lat.values()), None)
            l = ""
            lat_cells = ["", "", ""]
            if v:
                avg = v["average_us"]
                med = v["median_us"]
                l = f"{avg:.1f}/{med:.1f}/{v['p99_us']:.1f}"
                lat_cells = [f"{avg:.3f}", f"{med:.3f}", f"{v['p99_us']:.3f}"]
            trusted = {True: "1", False: "0"}.get(o.get("trusted"), "")
            mark = "?" if trusted == "0" else " "
            questionable = questionable or trusted == "0"
            results.writerow([o["bench"], o["role"], o["op"], o["size"], o["postlist"], f"{o['mops']:.6f}", *lat_cells, extra, trusted])
            print(f"{o['bench']:<21} {o['role']:<7} {o['op']:<9} {o['size']:>5} {o['postlist']:>8} {o['mops']:>9.4f}{mark} {l:<28} {extra}")
        if not rows:
            print(f"{os.path.basename(log):<21} (no summary: see {log})")
if questionable:
    print("? questionable: the fabric's counters moved during that run (retransmissions, RNR, link or fatal errors; its log's counters line says which)")
PY

echo
echo "== plot: $out/suite.svg (Mops per run, from $out/results.csv)"
"$bin" plot "$out/results.csv" -o "$out/suite.svg" || rc=1
echo
echo "== doctor (is this host set up right for the numbers above?)"
# Its verdict lines and summary; a [fail] line (something that makes benchmarks fail) fails the suite.
"$bin" doctor ${RDMA_BENCH_DEVICE:+--device "$RDMA_BENCH_DEVICE"} || rc=1
exit $rc
