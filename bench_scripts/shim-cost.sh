#!/usr/bin/env bash
# What the C shim costs: user-space instructions per empty CQ poll, our crate (through
# shim_poll_cq) against C calling the inline ibv_poll_cq, counted by callgrind as
# (Ir(N2) - Ir(N1)) / (N2 - N1) so that setup cancels out. Runs on the testbed when needed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"
source "$here/lib/testbed.sh"
build_outside_testbed --example empty_poll
on_device 900 "" "$0" "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/empty_poll_c" "$here/callgrind/empty_poll.c" -libverbs
N1=${N1:-100000}
N2=${N2:-1100000}
ir() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$@" >/dev/null 2>&1
  awk '/^(summary|totals):/{print $2; exit}' "$tmp/cg"
}
for side in rust c; do
  bin=target/release/examples/empty_poll
  [ $side = c ] && bin=$tmp/empty_poll_c
  a=$(ir "$bin" "$N1"); b=$(ir "$bin" "$N2")
  printf '%-5s %8.2f instructions per empty poll  (Ir %s -> %s for %s -> %s polls)\n' \
    "$side" "$(python3 -c "print(($b - $a) / ($N2 - $N1))")" "$a" "$b" "$N1" "$N2"
done
