# vs-store.sh — `vs-original.sh --store SRC_DIR`: rdma-bench kv-bench against the original's
# mica/test.c on the same core, alternated, with callgrind's instructions per op for both. Sourced
# by vs-original.sh (set -euo pipefail; $here, $root, $prog and die come from there). Host only:
# no RDMA device, no testbed.

# store_rows LOG KINDS...: the medians of a run's pass rates (Mops) and GET miss fractions per
# kind, as lines `KIND MOPS MISS` (MISS "-" for a kind without GETs); `insert` is the first pass.
store_rows() {
  local log=$1 k
  shift
  for k in "$@"; do
    grep -a -o "pass [0-9]* $k: [0-9.]* Mops ([^)]*)" "$log" | awk -v k="$k" '
      { r[NR] = $4; m[NR] = "-"; if (match($0, /miss fraction [0-9.]+/)) m[NR] = substr($0, RSTART + 14, RLENGTH - 14) }
      function med(a, n,   i, j, t, b) {
        for (i = 1; i <= n; i++) b[i] = a[i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] + 0 < b[i] + 0) { t = b[i]; b[i] = b[j]; b[j] = t }
        return (n % 2) ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
      }
      END { if (NR > 0) printf "%s %s %s\n", k, med(r, NR), (m[1] == "-" ? "-" : med(m, NR)) }'
  done
}

# store_cg_rows PREFIX OPS LOG: per kind, the median over that kind's passes of callgrind's
# instructions per op (dump P of PREFIX holds pass P's timed loop), as lines `KIND INSTR`.
store_cg_rows() {
  local prefix=$1 ops=$2 log=$3 p kind f
  for p in $(grep -a -o 'pass [0-9]* [a-z]*:' "$log" | awk '{ print $2 }'); do
    kind=$(grep -a -o "pass $p [a-z]*:" "$log" | head -1 | awk '{ sub(":", "", $3); print $3 }')
    f=$prefix.$p
    [ -s "$f" ] || continue
    awk -v k="$kind" -v n="$ops" '/^(summary|totals):/ { printf "%s %.1f\n", k, $2 / n; exit }' "$f"
  done | awk '{ v[$1] = v[$1] " " $2 } END { for (k in v) { n = split(v[k], a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }; printf "%s %s\n", k, (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 } }'
}

store_main() {
  [ $# -eq 1 ] || die "--store takes one argument, SRC_DIR (see --help)" 2
  local src=$1 f
  local msg="SRC_DIR must be a checkout of https://github.com/efficient/rdma_bench (its mica/ and libhrd/)"
  for f in mica/test.c mica/mica.c mica/mica.h mica/city.c mica/Makefile libhrd/hrd.h libhrd/hrd_util.c libhrd/hrd_conn.c; do
    [ -f "$src/$f" ] || { echo "$prog: $msg; '$src' has no $f" >&2; exit 2; }
  done
  src=$(cd "$src" && pwd -P)

  local reps=${REPS:-8} passes=${PASSES:-6} scale=${CG_SCALE:-16} instr=${VS_INSTR:-1}
  local ncpu cpu num='^[0-9]+$'
  ncpu=$(nproc)
  cpu=${STORE_CPU:-$((ncpu - 1))}
  [[ $reps =~ $num && $reps -ge 1 ]] || die "REPS must be a whole number >= 1" 2
  [[ $passes =~ $num && $passes -ge 3 ]] || die "PASSES must be a whole number >= 3 (insert, get, update)" 2
  [[ $scale =~ $num && $scale -ge 1 && $scale -le 512 && $((scale & (scale - 1))) -eq 0 ]] ||
    die "CG_SCALE must be a power of two from 1 to 512" 2
  [[ $cpu =~ $num && $cpu -lt $ncpu ]] || die "STORE_CPU must be a CPU number below $ncpu" 2

  for t in gcc make patch taskset cargo; do
    command -v $t >/dev/null || die "$t not found: the original's test.c needs gcc, make and patch, the pinning taskset (util-linux)"
  done
  for h in numaif.h libmemcached/memcached.h infiniband/verbs.h; do
    [ -f "/usr/include/$h" ] || die "/usr/include/$h missing: the original's libhrd/hrd.h needs libnuma-dev libmemcached-dev libibverbs-dev"
  done
  local have_cg=0
  if [ "$instr" = 1 ]; then
    if command -v valgrind >/dev/null; then have_cg=1; else echo "$prog: valgrind not found: no instr/op column" >&2; fi
  fi
  # One store at a time (the runs alternate): 2 Mi buckets x 64 B of index and a 1 GiB log, both
  # on 2 MiB hugepages, as the original allocates them (shmget SHM_HUGETLB) and ours with
  # --hugepages require.
  local need=$(((2 * 1024 * 1024 * 64 + 1024 * 1024 * 1024) / (2 * 1024 * 1024))) free
  free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
  [ "${free:-0}" -ge "$need" ] ||
    die "one store needs $need free 2 MiB hugepages and the host has ${free:-0}: reserve them (as root: echo $need > /proc/sys/vm/nr_hugepages)"

  local out=$root/target/vs-original
  local tree=$out/store-src logs=$out/store-logs
  local rb=$root/target/release/rdma-bench
  # callgrind counts a store of 1/CG_SCALE of the sizes (same load)
  local keys=$((8 * 1024 * 1024 / scale)) bkts=$((2 * 1024 * 1024 / scale)) logb=$((1024 * 1024 * 1024 / scale))
  rm -rf "$tree" "$logs"
  mkdir -p "$tree" "$logs"
  tar -C "$src" -cf - mica libhrd | tar -C "$tree" -xf -
  patch -d "$tree" -p1 --forward -s <"$here/original-store.patch" >"$logs/patch.log" 2>&1 ||
    die "bench_scripts/original-store.patch does not apply to $src/mica/test.c (made for efficient/rdma_bench a038ec5): $(head -2 "$logs/patch.log" | tr '\n' ' ')"
  echo "$prog: building the patched mica/test.c in $tree" >&2
  # The original's flags but -Werror (gcc 12 warns in libhrd/hrd_util.c), and libm for the Zipf
  # draws. The sizes are compile-time constants, as in the original (its loops are sized and
  # unrolled for them): one binary per size set, test-bB at the full size and test-bB-cg at
  # 1/CG_SCALE of it, B the batch. Only test.o is rebuilt between them.
  local cflags='-O3 -Wall -Wno-unused-result -I ../libhrd/' b
  : >"$logs/build.log"
  build_c() { # NAME DEFINES...
    rm -f "$tree/mica/test.o" "$tree/mica/test"
    LDFLAGS=-lm make -C "$tree/mica" test CFLAGS="$cflags ${*:2}" >>"$logs/build.log" 2>&1 ||
      die "the original's mica/test.c did not build with ${*:2}, see $logs/build.log"
    mv "$tree/mica/test" "$tree/mica/test-$1"
  }
  for b in 16 32; do
    build_c "b$b" -DTEST_BATCH_SIZE=$b
    [ $have_cg = 0 ] ||
      build_c "b$b-cg" -DTEST_BATCH_SIZE=$b -DTEST_NUM_KEYS=$keys -DTEST_NUM_BKTS=$bkts -DTEST_LOG_CAP=$logb
  done
  (cd "$root" && cargo build --release --bin rdma-bench) >>"$logs/build.log" 2>&1 ||
    die "cargo build --release --bin rdma-bench failed, see $logs/build.log"

  # workload -> ours' flags / the original's environment
  local workloads="passes mix herd zipf"
  ours_flags() {
    case $1 in
      passes) echo "--workload passes --batch 16" ;;
      mix) echo "--workload mix --batch 32 --update-percentage 5" ;;
      herd) echo "--workload herd --batch 32 --update-percentage 5" ;;
      zipf) echo "--workload herd --batch 32 --update-percentage 5 --zipf 0.99" ;;
    esac
  }
  # workload -> the original's binary (its batch) and environment
  orig_bin() { case $1 in passes) echo "$tree/mica/test-b16" ;; *) echo "$tree/mica/test-b32" ;; esac; }
  orig_env() {
    case $1 in
      passes) ;;
      mix) echo "TEST_MIX_PUT_PCT=5" ;;
      herd) echo "TEST_MIX_PUT_PCT=5 TEST_HERD_THETA=0" ;;
      zipf) echo "TEST_MIX_PUT_PCT=5 TEST_HERD_THETA=0.99" ;;
    esac
  }
  kinds() { case $1 in passes) echo "insert update get" ;; mix) echo mix ;; *) echo herd ;; esac; }
  run_ours() { # WORKLOAD LOG
    # shellcheck disable=SC2046
    timeout 900 taskset -c "$cpu" "$rb" kv-bench $(ours_flags "$1") --passes "$passes" --hugepages require >"$2" 2>&1 ||
      echo "$prog: ours ($1) failed, see $2" >&2
  }
  run_orig() { # WORKLOAD LOG
    # shellcheck disable=SC2046
    env $(orig_env "$1") TEST_PASSES="$passes" timeout 900 taskset -c "$cpu" "$(orig_bin "$1")" --num-threads 1 >"$2" 2>&1 ||
      echo "$prog: the original ($1) failed, see $2" >&2
  }

  local t0 w r k a b
  t0=$(date +%s)
  echo "$prog: $reps alternated pairs per workload on CPU $cpu, $passes passes a run" >&2
  : >"$logs/rows"
  for ((r = 1; r <= reps; r++)); do
    for w in $workloads; do
      if ((r % 2)); then
        run_ours "$w" "$logs/ours-$w-r$r.log"
        run_orig "$w" "$logs/original-$w-r$r.log"
      else
        run_orig "$w" "$logs/original-$w-r$r.log"
        run_ours "$w" "$logs/ours-$w-r$r.log"
      fi
      # shellcheck disable=SC2046
      join <(store_rows "$logs/original-$w-r$r.log" $(kinds "$w") | sort) \
        <(store_rows "$logs/ours-$w-r$r.log" $(kinds "$w") | sort) |
        awk -v w="$w" -v r="$r" '{ print w, r, $0 }' >>"$logs/rows"
    done
    echo "$prog: pair $r of $reps done ($(($(date +%s) - t0)) s)" >&2
  done

  # callgrind: the timed loop alone, one dump per pass, at 1/CG_SCALE of the sizes (same load)
  : >"$logs/instr"
  if [ $have_cg = 1 ]; then
    local d=$logs/callgrind
    mkdir -p "$d"
    echo "$prog: callgrind at 1/$scale size ($keys keys)" >&2
    for w in $workloads; do
      # shellcheck disable=SC2046
      valgrind --tool=callgrind --toggle-collect='rdma_bench::kv::bench::timed_pass' \
        --dump-after='rdma_bench::kv::bench::timed_pass' --callgrind-out-file="$d/ours-$w.cg" \
        "$rb" kv-bench $(ours_flags "$w") --passes "$passes" --num-keys $keys --num-buckets $bkts \
        --log-bytes $logb --hugepages off >"$d/ours-$w.log" 2>&1 || echo "$prog: callgrind of ours ($w) failed, see $d" >&2
      # shellcheck disable=SC2046
      env $(orig_env "$w") TEST_PASSES="$passes" \
        valgrind --tool=callgrind --toggle-collect=timed_pass --dump-after=timed_pass \
        --callgrind-out-file="$d/original-$w.cg" "$(orig_bin "$w")-cg" --num-threads 1 >"$d/original-$w.log" 2>&1 ||
        echo "$prog: callgrind of the original ($w) failed, see $d" >&2
      join <(store_cg_rows "$d/original-$w.cg" $keys "$d/original-$w.log" | sort) \
        <(store_cg_rows "$d/ours-$w.cg" $keys "$d/ours-$w.log" | sort) |
        awk -v w="$w" '{ print w, $0 }' >>"$logs/instr"
    done
  fi

  echo
  printf '%-40s %13s %9s %7s %18s %18s\n' workload "original Mops" "ours Mops" ours/C "instr/op C / ours" "GET miss C / ours"
  local row label
  for row in "passes insert" "passes update" "passes get" "mix mix" "herd herd" "zipf herd"; do
    read -r w k <<<"$row"
    case $row in
      "passes insert") label="inserts (first PUT pass)" ;;
      "passes update") label="updates (later PUT passes)" ;;
      "passes get") label="GETs" ;;
      "mix mix") label="mixed 95 % GET / 5 % PUT, batch 32" ;;
      "herd herd") label="HERD mix, uniform, 5 % PUT, batch 32" ;;
      "zipf herd") label="HERD mix, zipf 0.99, 5 % PUT, batch 32" ;;
    esac
    # rows: workload rep kind origMops origMiss oursMops oursMiss
    awk -v w="$w" -v k="$k" -v label="$label" -v instr="$(awk -v w="$w" -v k="$k" '$1 == w && $2 == k { printf "%.0f / %.0f", $3, $4 }' "$logs/instr")" '
      function med(a, n,   i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      $1 == w && $3 == k { n++; c[n] = $4; o[n] = $6; q[n] = $6 / $4; cm[n] = $5; om[n] = $7 }
      END {
        if (n == 0) { printf "%-40s %13s %9s %7s %18s %18s\n", label, "-", "-", "-", (instr == "" ? "-" : instr), "-"; exit }
        miss = (k == "insert" || k == "update" || cm[1] == "-" || om[1] == "-") ? "-" : sprintf("%.4f / %.4f", med(cm, n), med(om, n))
        printf "%-40s %13.2f %9.2f %7.2f %18s %18s\n", label, med(c, n), med(o, n), med(q, n), (instr == "" ? "-" : instr), miss
      }' "$logs/rows"
  done
  echo "($reps alternated pairs per workload pinned to CPU $cpu, $passes passes a run; Mops: each run's median over its passes of the row's kind, then the median over the runs; ours/C: the median of the pairs' ratios; instr/op: callgrind on the timed loop at 1/$scale size; logs in $logs; $(($(date +%s) - t0)) s)"
}
