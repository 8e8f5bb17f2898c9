#!/usr/bin/env bash
# old-verbs-headers.sh OUT — an include dir that looks like an rdma-core older than v24: the
# installed infiniband/ and rdma/ headers, with the extended post API (struct ibv_qp_ex,
# ibv_qp_to_qp_ex, every ibv_wr_* inline, the send_ops_flags of ibv_qp_init_attr_ex) and the
# v32 GID-entry API (ibv_query_gid_ex, ibv_query_gid_table, struct ibv_gid_entry) cut out of
# infiniband/verbs.h. Build rdma-bench against it with RDMA_CORE_INCLUDE_DIR=OUT to check that the
# cfg-gated code compiles without them (bench_scripts/test.sh does).
#
# Environment: VERBS_INCLUDE (default /usr/include) is where the installed headers are.
set -euo pipefail

[ $# -eq 1 ] && [ "$1" != -h ] && [ "$1" != --help ] || {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
}
out=$1
src=${VERBS_INCLUDE:-/usr/include}
[ -e "$src/infiniband/verbs.h" ] || { echo "old-verbs-headers.sh: no $src/infiniband/verbs.h" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
cp -rL "$src/infiniband" "$out/"
[ -d "$src/rdma" ] && cp -rL "$src/rdma" "$out/"

# Line-based cuts, in the header's own style (kernel style: a top-level definition ends with "}"
# or "};" in column 0, a prototype with ");").
python3 - "$out/infiniband/verbs.h" <<'PY'
import re, sys

path = sys.argv[1]
lines = open(path).read().split("\n")
# (start pattern, end pattern): delete from a start line through the first end line.
blocks = [
    (r"^struct ibv_qp_ex \{", r"^\};"),
    (r"^enum ibv_qp_create_send_ops_flags \{", r"^\};"),
    (r"^struct ibv_qp_ex \*ibv_qp_to_qp_ex\(", r"\);"),
    (r"^static inline [^(]*\bibv_wr_\w+\(", r"^\}"),
    (r"^enum ibv_gid_type \{", r"^\};"),
    (r"^struct ibv_gid_entry \{", r"^\};"),
    (r"^int _ibv_query_gid_ex\(", r"\);"),
    (r"^static inline int ibv_query_gid_ex\(", r"^\}"),
    (r"^ssize_t _ibv_query_gid_table\(", r"\);"),
    (r"^static inline ssize_t ibv_query_gid_table\(", r"^\}"),
]
# Single lines: the create-time flag, its field, a doc comment naming a cut function.
single = [r"IBV_QP_INIT_ATTR_SEND_OPS_FLAGS", r"send_ops_flags", r"^ \* ibv_query_gid_ex - "]
out, end = [], None
for line in lines:
    if end:
        if re.search(end, line):
            end = None
        continue
    hit = next((e for s, e in blocks if re.search(s, line)), None)
    if hit:
        end = None if re.search(hit, line) and not hit.startswith("^") else hit
        continue
    if any(re.search(p, line) for p in single):
        continue
    out.append(line)
text = "\n".join(out)
left = re.findall(r"\bibv_qp_ex\b|\bibv_wr_(?!opcode)\w+\(|query_gid_ex|ibv_gid_entry", text)
if left:
    sys.exit(f"old-verbs-headers.sh: still in {path}: {sorted(set(left))}")
open(path, "w").write(text)
PY

# What is left must still be a working header.
printf '#include <infiniband/verbs.h>\nint main(void) { return ibv_get_device_list(0) != 0; }\n' |
  cc -fsyntax-only -Werror=implicit-function-declaration -I"$out" -x c - ||
  { echo "old-verbs-headers.sh: the cut header does not compile" >&2; exit 1; }
echo "$out"
