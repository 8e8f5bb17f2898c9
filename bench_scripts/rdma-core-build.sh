#!/usr/bin/env bash
# rdma-core-build.sh — a second rdma-core (v55, built from source) to build and test rdma-bench
# against, next to the distribution's own (Debian 12: v44).
#
#   rdma-core-build.sh            build once (cached), print the install prefix on stdout
#   rdma-core-build.sh --help
#
# The source is rdma-core v55 as vendored in the crates.io package ibverbs-sys 0.3.2+55.0 (a
# tar.gz with vendor/rdma-core), fetched with curl and checked against the sha256 pinned below
# (crates.io's index lists the same checksum). Only what rdma-bench needs is built: libibverbs,
# librdmacm and the rxe (Soft-RoCE) provider, and installed by hand into PREFIX:
#
#   PREFIX/include/{infiniband,rdma}/   headers       (RDMA_CORE_INCLUDE_DIR)
#   PREFIX/lib/lib{ibverbs,rdmacm}.so*  libraries     (RDMA_CORE_LIB_DIR; rdma-bench's RUNPATH)
#   PREFIX/lib/libibverbs/librxe-rdmav34.so           the provider
#   PREFIX/etc/libibverbs.d/rxe.driver                "driver rxe"
#
# The install paths are compiled into this libibverbs (IBV_CONFIG_DIR = PREFIX/etc/libibverbs.d,
# VERBS_PROVIDER_DIR = PREFIX/lib/libibverbs): a program that loads PREFIX/lib/libibverbs.so.1 finds
# its own rxe provider with no environment variable, and never reads the system's /etc/libibverbs.d.
#
# A finished build is a no-op (stamp file PREFIX/.built-<recipe>). Build deps: curl, cmake, ninja
# (or make), gcc, python3, libnl-3-dev, libnl-route-3-dev (bench_scripts/softroce.sh setup installs
# them). Cache: $XDG_CACHE_HOME/rdma-bench/rdma-core-55 (default ~/.cache/...); override with
# RDMA_CORE_55_DIR.
set -euo pipefail

readonly PROG=rdma-core-build.sh
readonly VERSION=55.0
readonly CRATE=ibverbs-sys-0.3.2+55.0
readonly URL="https://static.crates.io/crates/ibverbs-sys/$CRATE.crate"
readonly SHA256=8149ab8d940ea7e7073a24ba6e3ec6b0cc8ceab6ea3d562d60a21ca5cc23413a
# Provider ABI of v55 (IBVERBS_PABI_VERSION in its CMakeLists.txt): the provider's file name.
readonly PABI=34
# Bump when the recipe below changes so that a cached prefix is rebuilt.
readonly RECIPE=1

die() { echo "$PROG: $*" >&2; exit 1; }

case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1' (see --help)" ;;
esac

readonly DIR="${RDMA_CORE_55_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdma-bench/rdma-core-55}"
readonly PREFIX="$DIR/prefix"
readonly STAMP="$PREFIX/.built-$RECIPE"

if [ -e "$STAMP" ]; then
  echo "$PREFIX"
  exit 0
fi
# One build at a time per cache (several worktrees may run test.sh at once); the winner's build
# is the others' no-op.
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
if [ -e "$STAMP" ]; then
  echo "$PREFIX"
  exit 0
fi

for tool in curl cmake gcc python3 sha256sum tar; do
  command -v "$tool" >/dev/null || die "$tool is missing (bench_scripts/softroce.sh setup installs the build deps)"
done
if command -v ninja >/dev/null; then generator=(-G Ninja); else generator=(); fi

start=$(date +%s)
crate="$DIR/$CRATE.crate"
if [ ! -e "$crate" ] || ! echo "$SHA256  $crate" | sha256sum -c --status; then
  echo "$PROG: downloading $URL" >&2
  curl -sSfL --retry 3 -o "$crate.part" "$URL" || die "download of $URL failed"
  echo "$SHA256  $crate.part" | sha256sum -c --status ||
    die "$crate.part: sha256 is not the pinned $SHA256 (corrupt or changed upstream)"
  mv "$crate.part" "$crate"
fi

src="$DIR/src"
rm -rf "$src" "$DIR/build" "$PREFIX"
mkdir -p "$src"
tar -xzf "$crate" -C "$src" --strip-components=3 "$CRATE/vendor/rdma-core" ||
  die "$crate has no vendor/rdma-core"
grep -q "set(PACKAGE_VERSION \"$VERSION\")" "$src/CMakeLists.txt" ||
  die "the vendored rdma-core is not v$VERSION"

echo "$PROG: configuring rdma-core v$VERSION (prefix $PREFIX)" >&2
cmake -S "$src" -B "$DIR/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" -DNO_MAN_PAGES=1 -DNO_PYVERBS=1 -DENABLE_STATIC=0 \
  -DENABLE_VALGRIND=0 >"$DIR/cmake.log" 2>&1 || die "cmake failed (log: $DIR/cmake.log)"

echo "$PROG: building libibverbs, librdmacm and the rxe provider" >&2
cmake --build "$DIR/build" --parallel "$(nproc)" --target ibverbs rdmacm "rxe-rdmav$PABI" \
  >"$DIR/build.log" 2>&1 || die "build failed (log: $DIR/build.log)"

# A hand install of the three targets (cmake --install would want every target of rdma-core).
b="$DIR/build"
mkdir -p "$PREFIX/include" "$PREFIX/lib/libibverbs" "$PREFIX/etc/libibverbs.d"
cp -rL "$b/include/infiniband" "$b/include/rdma" "$PREFIX/include/"
cp -a "$b"/lib/libibverbs.so* "$b"/lib/librdmacm.so* "$PREFIX/lib/"
cp "$b/lib/librxe-rdmav$PABI.so" "$PREFIX/lib/libibverbs/"
echo "driver rxe" >"$PREFIX/etc/libibverbs.d/rxe.driver"
[ -e "$PREFIX/include/infiniband/verbs.h" ] && [ -e "$PREFIX/include/rdma/rdma_cma.h" ] &&
  [ -e "$PREFIX/lib/libibverbs.so.1" ] && [ -e "$PREFIX/lib/librdmacm.so.1" ] ||
  die "install into $PREFIX is incomplete"
rm -rf "$src" "$b"
touch "$STAMP"
echo "$PROG: rdma-core v$VERSION built in $(( $(date +%s) - start )) s" >&2
echo "$PREFIX"
