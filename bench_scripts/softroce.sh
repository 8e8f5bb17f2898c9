#!/usr/bin/env bash
# softroce.sh — a real RDMA verbs device (Soft-RoCE, rdma_rxe) on any Linux box.
#
#   softroce.sh setup                 install what is missing, fetch a kernel, build an initramfs
#   softroce.sh run [opts] -- CMD...  run CMD where an ACTIVE RDMA port exists
#
# `run` picks the cheapest way to get a device: (1) the host already has an ACTIVE port; (2) the host
# kernel has rdma_rxe and we are root: rxe0 on lo for the duration of CMD; (3) a qemu guest (TCG) booting
# Debian's stock kernel with the host's root filesystem shared read-only over 9p under a tmpfs overlay,
# so CMD runs the host's own binaries and libraries unchanged. SOFTROCE_VM=1 forces (3).
set -uo pipefail

readonly PROG=softroce.sh
readonly CACHE="${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/rdma-bench/softroce"
# Bump when the initramfs recipe changes so that `setup` rebuilds it.
readonly RECIPE=7
# Guest network: TEST-NET-1 addresses that exist only inside the guests.
readonly NET_PREFIX=192.0.2
# `run --ipv6-only`: the documentation prefix instead, and no IPv4 address on the fabric.
readonly NET6_PREFIX=2001:db8:
readonly GUEST_MTU=9000
readonly HUGEPAGES=256
# `run --siw`: the Soft-iWARP device and its own netdev and subnet (TEST-NET-2), so that RDMA CM's
# address picks siw0 and never the rxe device of the other netdev.
readonly SIW_NET=198.51.100

APT_PACKAGES=(qemu-system-x86 busybox-static cpio kmod rdma-core ibverbs-providers ibverbs-utils
  libibverbs-dev librdmacm-dev perftest memcached iproute2 libclang-dev valgrind pkg-config
  openmpi-bin openssh-client procps
  # rdma-core v55 built from source by bench_scripts/rdma-core-build.sh (test.sh's portability step)
  curl cmake ninja-build gcc libnl-3-dev libnl-route-3-dev python3
  # promtool: tests/host/history.rs checks `rdma-bench history prom`'s file with the real parser
  prometheus
  # tcpdump: tests/device/twonode/qos.rs reads the DSCP byte and TTL of the RoCE v2 packets on the wire
  tcpdump)
# Commands and files whose presence means "the package is there" (cheap check for a no-op setup).
PRESENCE=(qemu-system-x86_64 /bin/busybox cpio depmod ibv_devinfo ib_write_bw memcached rdma
  /usr/include/infiniband/verbs.h /usr/include/rdma/rdma_cma.h valgrind pkg-config mpirun ssh pkill
  curl cmake ninja gcc /usr/include/libnl3/netlink/route/link.h python3 promtool tcpdump)

die() { echo "$PROG: $*" >&2; exit 1; }
note() { [ "${SOFTROCE_VERBOSE:-0}" = 1 ] && echo "$PROG: $*" >&2; return 0; }

usage() {
  cat <<'USAGE'
usage: softroce.sh setup
       softroce.sh run [--nodes 1-4] [--sshd] [--numa] [--siw] [--ipv6-only] [--share DIR] [--timeout SECS] -- CMD [ARGS...]

setup   Install missing packages (Debian/Ubuntu), fetch Debian's linux-image-amd64 (unpacked, never
        installed) and build a small initramfs, all under $XDG_CACHE_HOME/rdma-bench/softroce
        (default ~/.cache/rdma-bench/softroce). A second setup is a no-op.

run     Run CMD where a Soft-RoCE (or real) RDMA device is ACTIVE and exit with CMD's exit code:
          1. the host has an ACTIVE RDMA port: CMD runs directly;
          2. the host kernel has rdma_rxe and we are root: rxe0 is made on lo for CMD, removed after;
          3. otherwise a qemu guest (TCG) runs CMD as root, in the same directory, on the host's own
             files (read-only; writes go to a tmpfs), output streamed live.
        CMD sees RDMA_BENCH_DEVICE (e.g. rxe0), RDMA_BENCH_GID_INDEX (the RoCE v2 IPv4 GID),
        RDMA_BENCH_IP (the address the device is bound to) and SOFTROCE_INSIDE=1.

        --nodes N     1 (default) to 4: N guests on one virtual Ethernet segment (qemu's multicast
                      socket netdev on the host's loopback), node n at 192.0.2.<n+1>. CMD runs on
                      every node with SOFTROCE_NODE=n, SOFTROCE_NODES=N, SOFTROCE_PEERS=<the other
                      nodes' addresses, space-separated, in node order> and SOFTROCE_PEER=<the first
                      of them>; output lines are prefixed [node<n>]; the exit code is the first
                      non-zero one. Each guest costs a TCG emulator on the host's cores: with more
                      guests than cores, boots and runs slow down in proportion.
        --sshd        (guests only) start sshd in every guest before CMD; root on each guest
                      reaches the others with a plain `ssh <address>` (a key made for this run,
                      no host key checks): what multi-machine launchers such as
                      bench_scripts/rc-swarm/run-all.sh need.
        --numa        (guests only) two NUMA nodes in every guest, half the memory each, CPU 0
                      on node 0 and the other CPUs on node 1 (a two-socket host); the guest's
                      hugepages are spread over both (move them with
                      /sys/devices/system/node/nodeN/hugepages/hugepages-2048kB/nr_hugepages).
        --siw         (guests, one node) Soft-iWARP too: siw0 on its own netdev dummy1 at
                      198.51.100.1 (so that RDMA CM's address picks it, never rxe0); CMD sees
                      SOFTROCE_SIW_DEVICE=siw0 and SOFTROCE_SIW_IP. rxe0 stays the first device.
                      siw.ko is built by setup from Debian's kernel source (its kernel has no siw).
        --ipv6-only   (guests only) the fabric has no IPv4 address, as on clusters without IPv4:
                      node n is 2001:db8::<n+1>/64 only (lo keeps 127.0.0.1), rxe0's GIDs are
                      IPv6 ones, RDMA_BENCH_GID_INDEX is its RoCE v2 GID of that address, and
                      RDMA_BENCH_IP, SOFTROCE_PEERS and SOFTROCE_PEER are IPv6 addresses.
        --share DIR   writable from inside the guest; what CMD writes there is on the host afterwards
                      (default ./target/softroce-share).
        --timeout S   bound on the whole run, boot included (default 600); a hung guest is killed.

environment: SOFTROCE_VM=1 forces the guest; SOFTROCE_CPUS (2; 1 with 3 or more nodes, where more
             vCPUs than host cores slow every guest down), SOFTROCE_MEM (2048 MiB) size each guest;
             SOFTROCE_KERNEL_ARGS (mitigations=off) are added to the guest kernel's command line;
             SOFTROCE_VERBOSE=1 reports the path taken and the boot time on stderr.
USAGE
}

# ---------------------------------------------------------------------------------------------- setup

missing_packages() {
  local p
  for p in "${PRESENCE[@]}"; do
    if [[ $p == /* ]]; then [ -e "$p" ] || return 0; else command -v "$p" >/dev/null || return 0; fi
  done
  return 1
}

install_packages() {
  missing_packages || return 0
  if ! command -v apt-get >/dev/null; then
    die "not a Debian/Ubuntu system: install qemu-system-x86, a static busybox, cpio, kmod, rdma-core \
(libibverbs, providers, utils, headers, librdmacm), perftest, memcached, iproute2, libclang, valgrind, \
openmpi, an ssh client, procps, prometheus (promtool), tcpdump"
  fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "$PROG: installing packages: ${APT_PACKAGES[*]}" >&2
  $sudo apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${APT_PACKAGES[@]}" >&2 || die "apt-get install failed (packages: ${APT_PACKAGES[*]})"
}

# The kernel version that linux-image-amd64 currently points at.
current_kernel_pkg() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

build_initramfs() {
  local kver=$1 kdir=$CACHE/kernel work
  work=$(mktemp -d "$CACHE/initramfs.XXXXXX") || die "cannot write to $CACHE"
  mkdir -p "$work"/{bin,proc,sys,dev,ctl,lib/modules} || die "cannot write to $work"
  cp /bin/busybox "$work/bin/busybox" || die "no static busybox (install busybox-static)"
  # Stage 1 only brings up the control share; stage 2 (written by `run`) does the rest, so changing
  # the guest's setup never needs a rebuilt initramfs.
  local m args
  depmod -b "$kdir" "$kver" || die "depmod failed on $kdir"
  : >"$work/modules"
  for m in virtio_pci 9pnet_virtio 9p; do
    modprobe -d "$kdir" -S "$kver" --show-depends "$m" || die "module $m not in kernel $kver"
  done | awk '!seen[$2]++' | while read -r _ path args; do
    cp "$path" "$work/lib/modules/" && echo "/lib/modules/$(basename "$path") $args" >>"$work/modules"
  done
  cat >"$work/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r m args; do insmod "$m" $args; done </modules
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ctl /ctl || echo "softroce-guest: no control share"
exec sh /ctl/stage2.sh
INIT
  chmod +x "$work/init"
  (cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$CACHE/initramfs.img.tmp" \
    || die "cannot build the initramfs (cpio/gzip failed; disk full?)"
  mv "$CACHE/initramfs.img.tmp" "$CACHE/initramfs.img"
  rm -rf "$work"
}

# Modules stage 2 loads from the kernel tree over 9p, in insmod order (rdma_ucm: RDMA CM, for -R;
# sch_netem: the fault tests' loss and delay); `run --siw` loads modules.siw after them.
write_module_list() {
  local kver=$1 m
  for m in overlay crc32_generic rdma_rxe rdma_ucm dummy virtio_net sch_netem; do
    modprobe -d "$CACHE/kernel" -S "$kver" --show-depends "$m" || die "module $m not in kernel $kver"
  done | awk '!seen[$2]++ {print $2, $3, $4}' >"$CACHE/modules.stage2"
  rm -f "$CACHE/modules.siw"
  if [ -f "$CACHE/kernel/lib/modules/$kver/updates/siw.ko" ]; then
    modprobe -d "$CACHE/kernel" -S "$kver" --show-depends siw | awk '{print $2, $3, $4}' >"$CACHE/modules.siw" ||
      rm -f "$CACHE/modules.siw"
  fi
}

# Soft-iWARP for `run --siw`. Debian builds its kernel without CONFIG_RDMA_SIW, so siw.ko is built
# here from Debian's own source package (drivers/infiniband/sw/siw only) against the headers of the
# guest's kernel, and put into the unpacked kernel tree. Both packages are build inputs only (no
# kernel is installed on the host). A failure is a warning: only `run --siw` needs the module.
build_siw() {
  local kver=$1 tree=$CACHE/kernel/lib/modules/$1 ver src work
  [ -f "$tree/updates/siw.ko" ] && return 0
  ver=$(apt-cache show "linux-headers-$kver" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)
  src=linux-source-$(echo "$kver" | cut -d. -f1,2)
  [ -n "$ver" ] || { echo "$PROG: warning: no linux-headers-$kver package: run --siw will not work" >&2; return 0; }
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "$PROG: building siw.ko for $kver from $src $ver" >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "linux-headers-$kver=$ver" "$src=$ver" >&2 ||
    { echo "$PROG: warning: cannot install linux-headers-$kver and $src $ver: run --siw will not work" >&2; return 0; }
  work=$(mktemp -d "$CACHE/siw.XXXXXX") || die "cannot write to $CACHE"
  if tar -xJf "/usr/src/$src.tar.xz" -C "$work" --strip-components=5 "$src/drivers/infiniband/sw/siw" &&
    make -s -C "/usr/src/linux-headers-$kver" M="$work" CONFIG_RDMA_SIW=m modules >"$work/build.log" 2>&1 &&
    strip --strip-debug "$work/siw.ko" && mkdir -p "$tree/updates" && cp "$work/siw.ko" "$tree/updates/siw.ko" &&
    depmod -b "$CACHE/kernel" "$kver"; then
    rm -rf "$work"
  else
    echo "$PROG: warning: siw.ko did not build (log kept in $work/build.log): run --siw will not work" >&2
  fi
}

cmd_setup() {
  local stamp=$CACHE/ready
  if [ -f "$stamp" ] && ! missing_packages && [ "$(sed -n 2p "$stamp")" = "recipe=$RECIPE" ]; then
    return 0
  fi
  install_packages
  mkdir -p "$CACHE" || die "cannot create $CACHE"
  local pkg kver deb
  pkg=$(current_kernel_pkg)
  [ -n "$pkg" ] || { apt-get update -qq >&2 2>/dev/null; pkg=$(current_kernel_pkg); }
  [ -n "$pkg" ] || die "cannot resolve linux-image-amd64 (no Debian package lists? run apt-get update)"
  kver=${pkg#linux-image-}
  if [ ! -f "$CACHE/kernel/boot/vmlinuz-$kver" ]; then
    echo "$PROG: fetching $pkg" >&2
    local dl
    dl=$(mktemp -d "$CACHE/dl.XXXXXX") || die "cannot write to $CACHE"
    (cd "$dl" && apt-get download "$pkg" 2>/dev/null) || { rm -rf "$dl"; die "apt-get download $pkg failed"; }
    deb=$(ls "$dl"/*.deb)
    rm -rf "$CACHE/kernel"
    dpkg -x "$deb" "$CACHE/kernel" || { rm -rf "$dl" "$CACHE/kernel"; die "cannot unpack $deb (no space in $CACHE?)"; }
    rm -rf "$dl"
  fi
  if [ ! -x "$CACHE/sshd/usr/sbin/sshd" ]; then
    # sshd for the guests of `run --sshd` (unpacked, never installed: the host runs no sshd).
    echo "$PROG: fetching openssh-server" >&2
    local dl
    dl=$(mktemp -d "$CACHE/dl.XXXXXX") || die "cannot write to $CACHE"
    if (cd "$dl" && apt-get download openssh-server libwrap0 2>/dev/null); then
      rm -rf "$CACHE/sshd"
      for deb in "$dl"/*.deb; do
        dpkg -x "$deb" "$CACHE/sshd" || { rm -rf "$CACHE/sshd"; break; }
      done
    fi
    # Only `run --sshd` needs it, and says so when it is missing.
    [ -x "$CACHE/sshd/usr/sbin/sshd" ] || echo "$PROG: warning: could not fetch openssh-server: run --sshd will not work" >&2
    rm -rf "$dl"
  fi
  build_initramfs "$kver"
  build_siw "$kver"
  write_module_list "$kver"
  printf 'kernel=%s\nrecipe=%s\n' "$kver" "$RECIPE" >"$stamp" || die "cannot write $stamp (disk full?)"
  echo "$PROG: ready (kernel $kver) in $CACHE" >&2
}

# ------------------------------------------------------------------------------------------------ run

# Prints "device gid_index ip" for the first ACTIVE port on the host, or nothing.
host_active_device() {
  local p dev gid
  for p in /sys/class/infiniband/*/ports/*; do
    [ -r "$p/state" ] || continue
    grep -q ACTIVE "$p/state" || continue
    dev=$(basename "$(dirname "$(dirname "$p")")")
    gid=$(roce_v2_ipv4_gid "$p")
    echo "$dev ${gid:-0 -}"
    return 0
  done
}

# Prints "index ip" of the RoCE v2 IPv4-mapped GID of a port directory, or nothing.
roce_v2_ipv4_gid() {
  local port=$1 f i v
  for f in "$port"/gids/*; do
    i=${f##*/}
    v=$(cat "$f" 2>/dev/null) || continue
    case $v in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
    [ "$(cat "$port/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
    local h=${v#0000:0000:0000:0000:0000:ffff:}
    h=${h//:/}
    echo "$i $((16#${h:0:2})).$((16#${h:2:2})).$((16#${h:4:2})).$((16#${h:6:2}))"
    return 0
  done
}

run_with_timeout() {
  local secs=$1; shift
  timeout -k 5 "$secs" "$@"
  local rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "$PROG: timed out after ${secs}s; stopped" >&2
  fi
  return $rc
}

# Path 2: a host kernel with rdma_rxe, and root.
run_host_rxe() {
  local timeout=$1; shift
  modprobe rdma_rxe 2>/dev/null || return 200
  rdma link add rxe0 type rxe netdev lo 2>/dev/null || return 200
  local i gid=""
  for i in $(seq 50); do
    gid=$(roce_v2_ipv4_gid /sys/class/infiniband/rxe0/ports/1) && [ -n "$gid" ] && break
    sleep 0.1
  done
  note "path 2: host rdma_rxe, rxe0 on lo, gid ${gid%% *}"
  SOFTROCE_INSIDE=1 RDMA_BENCH_DEVICE=rxe0 RDMA_BENCH_GID_INDEX=${gid%% *} RDMA_BENCH_IP=${gid##* } \
    run_with_timeout "$timeout" "$@"
  local rc=$?
  rdma link delete rxe0 2>/dev/null
  return $rc
}

# Node n's address on the guests' Ethernet.
node_address() {
  if [ "${IPV6_ONLY:-0}" = 1 ]; then echo "$NET6_PREFIX:$(($1 + 1))"; else echo "$NET_PREFIX.$(($1 + 1))"; fi
}

# Stage 2 of the guest's init (busybox sh), run from the control share.
write_stage2() {
  local ctl=$1 node=$2 nodes=$3 share=$4 ip peers="" n
  ip=$(node_address "$node")
  for ((n = 0; n < nodes; n++)); do
    [ "$n" = "$node" ] || peers="$peers${peers:+ }$(node_address "$n")"
  done
  cat >"$ctl/stage2.sh" <<STAGE2
# generated by softroce.sh
CACHE='$CACHE' CTL='$ctl' SHARE='$share' NODE=$node NODES=$nodes IP=$ip PEERS='$peers' MTU=$GUEST_MTU HUGEPAGES=$HUGEPAGES
SIW=${SIW:-0} SIW_IP=$SIW_NET.1 IPV6_ONLY=${IPV6_ONLY:-0}
STAGE2
  cat >>"$ctl/stage2.sh" <<'STAGE2'
fail() { echo "softroce-guest: $*" >&2; echo 125 >/ctl/rc; sync; poweroff -f; }
exec </dev/null >/dev/ttyS0 2>/dev/ttyS1
stty -F /dev/ttyS0 raw -echo; stty -F /dev/ttyS1 raw -echo
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 root /lower || fail "cannot mount the host root"
load_modules() {
  while read -r m a b; do
    n=${m##*/}; n=${n%.ko}
    grep -q "^$(echo "$n" | tr - _) " /proc/modules || insmod "/lower$m" $a $b || fail "insmod $m failed"
  done <"$1"
}
load_modules "/lower$CACHE/modules.stage2"
mount -t tmpfs -o size=75% tmpfs /rw && mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot || fail "overlay mount failed"
R=/newroot
mount -t proc proc $R/proc; mount -t sysfs sys $R/sys; mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm $R/dev/hugepages
mount -t devpts devpts $R/dev/pts; mount -t tmpfs tmpfs $R/dev/shm; mount -t tmpfs tmpfs $R/run
# What udev would make: bash's process substitution needs /dev/fd.
ln -sf /proc/self/fd $R/dev/fd; ln -sf /proc/self/fd/0 $R/dev/stdin
ln -sf /proc/self/fd/1 $R/dev/stdout; ln -sf /proc/self/fd/2 $R/dev/stderr
mount -t hugetlbfs hugetlbfs $R/dev/hugepages
mkdir -p "$R$SHARE"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "$R$SHARE" || fail "cannot mount the share $SHARE"
echo $HUGEPAGES >/proc/sys/vm/nr_hugepages
hostname "softroce$NODE"
in_root() { chroot $R /usr/bin/env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
in_root ip link set lo up
if [ "$NODES" = 1 ]; then NETDEV=dummy0; in_root ip link add dummy0 type dummy; else NETDEV=eth0; fi
in_root ip link set "$NETDEV" mtu $MTU
if [ "$IPV6_ONLY" = 1 ]; then
  # nodad: the address is usable at once (duplicate detection would hold it tentative ~1 s).
  in_root ip -6 addr add "$IP/64" dev "$NETDEV" nodad || fail "cannot add $IP to $NETDEV"
  in_root ip link set "$NETDEV" up || fail "no $NETDEV"
  GID_FORM=2001:0db8:
else
  in_root ip addr add "$IP/24" dev "$NETDEV"
  in_root ip link set "$NETDEV" up || fail "no $NETDEV"
  # A route for multicast groups, as a host's default route gives (UD multicast: send-bw -g).
  in_root ip route add 224.0.0.0/4 dev "$NETDEV" || fail "no multicast route on $NETDEV"
  GID_FORM=0000:0000:0000:0000:0000:ffff:
fi
in_root rdma link add rxe0 type rxe netdev "$NETDEV" || fail "rdma link add rxe0 failed"
P=/sys/class/infiniband/rxe0/ports/1
GID=
for t in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  for f in $P/gids/*; do
    i=${f##*/}
    case "$(cat $f)" in "$GID_FORM"*) ;; *) continue ;; esac
    [ "$(cat $P/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && GID=$i && break
  done
  [ -n "$GID" ] && grep -q ACTIVE $P/state && break
  sleep 0.2
done
[ -n "$GID" ] || fail "rxe0 has no RoCE v2 GID of $IP"
if [ "$SIW" = 1 ]; then
  load_modules "/lower$CACHE/modules.siw"
  in_root ip link add dummy1 type dummy
  in_root ip link set dummy1 mtu $MTU
  in_root ip addr add "$SIW_IP/24" dev dummy1
  in_root ip link set dummy1 up || fail "no dummy1"
  in_root rdma link add siw0 type siw netdev dummy1 || fail "rdma link add siw0 failed"
  for t in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    grep -q ACTIVE /sys/class/infiniband/siw0/ports/1/state 2>/dev/null && break
    sleep 0.2
  done
  grep -q ACTIVE /sys/class/infiniband/siw0/ports/1/state || fail "siw0's port is not ACTIVE"
  fi
echo "$(cut -d' ' -f1 /proc/uptime)" >/ctl/booted
SOFTROCE_GUEST_DEVICE=rxe0 SOFTROCE_GUEST_GID=$GID SOFTROCE_GUEST_IP=$IP SOFTROCE_GUEST_PEERS="$PEERS" \
  SOFTROCE_GUEST_NODE=$NODE SOFTROCE_GUEST_NODES=$NODES chroot $R /bin/bash "$CTL/cmd.sh"
echo $? >/ctl/rc
sync
poweroff -f
STAGE2
}

# The command file: the caller's environment and directory, then CMD.
write_cmd() {
  local ctl=$1 nodes=$2; shift 2
  {
    echo "# generated by softroce.sh"
    export -p | grep -Ev '^declare -x (PWD|OLDPWD|SHLVL|_|TMPDIR|SOFTROCE_VM)(=|$)'
    echo 'export RDMA_BENCH_DEVICE=$SOFTROCE_GUEST_DEVICE RDMA_BENCH_GID_INDEX=$SOFTROCE_GUEST_GID'
    echo 'export RDMA_BENCH_IP=$SOFTROCE_GUEST_IP'
    if [ "${SIW:-0}" = 1 ]; then
      echo "export SOFTROCE_SIW_DEVICE=siw0 SOFTROCE_SIW_IP=$SIW_NET.1"
    fi
    if [ "$nodes" -gt 1 ]; then
      echo 'export SOFTROCE_NODE=$SOFTROCE_GUEST_NODE SOFTROCE_NODES=$SOFTROCE_GUEST_NODES'
      echo 'export SOFTROCE_PEERS="$SOFTROCE_GUEST_PEERS" SOFTROCE_PEER=${SOFTROCE_GUEST_PEERS%% *}'
    fi
    echo 'unset SOFTROCE_GUEST_DEVICE SOFTROCE_GUEST_GID SOFTROCE_GUEST_IP SOFTROCE_GUEST_PEERS SOFTROCE_GUEST_NODE SOFTROCE_GUEST_NODES'
    echo 'export SOFTROCE_INSIDE=1'
    # A version manager's shim (pyenv's) runs a shell script of tens of processes before every
    # python3: ~6 s per call in a TCG guest. The guest calls the interpreter it resolves to.
    local py
    py=$(python3 -c 'import os, sys; print(os.path.dirname(os.path.realpath(sys.executable)))' 2>/dev/null) &&
      printf 'export PATH=%q:"$PATH"\n' "$py"
    echo 'ulimit -l unlimited'
    if [ -n "${SSHD_KEYS:-}" ]; then
      cat <<SSHD
# sshd with this run's keys (the guest's /etc and /root are a tmpfs overlay: the host's stay as they are)
grep -q '^sshd:' /etc/passwd || echo 'sshd:x:$((60000 + RANDOM % 1000)):65534::/run/sshd:/usr/sbin/nologin' >>/etc/passwd
mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh
# bash sources ~/.bashrc for every command ssh runs; the host's may set up pyenv and the like,
# which costs seconds per command on an emulated CPU. The commands ssh runs here name their
# programs by path or find them in /usr/bin: the guest's root starts with an empty one.
echo '# softroce.sh: empty in the guest (the host keeps its own)' >/root/.bashrc
cp '$SSHD_KEYS/id' /root/.ssh/id_ed25519 && cp '$SSHD_KEYS/id.pub' /root/.ssh/authorized_keys
chmod 600 /root/.ssh/id_ed25519 /root/.ssh/authorized_keys
printf 'Host *\\n  StrictHostKeyChecking no\\n  UserKnownHostsFile /dev/null\\n  LogLevel ERROR\\n' >/root/.ssh/config
LD_LIBRARY_PATH='$CACHE/sshd/usr/lib/x86_64-linux-gnu:$CACHE/sshd/lib/x86_64-linux-gnu' '$CACHE/sshd/usr/sbin/sshd' -f /dev/null \\
  -h '$SSHD_KEYS/host' -o PermitRootLogin=prohibit-password -o UsePAM=no -o StrictModes=no \\
  -o PidFile=/run/sshd.pid -o AuthorizedKeysFile=.ssh/authorized_keys || { echo 'softroce.sh: sshd did not start' >&2; exit 125; }
SSHD
    fi
    printf 'cd %q || exit 125\n' "$PWD"
    printf '%q ' "$@"
    echo
  } >"$ctl/cmd.sh"
}

# Boots one guest; stdout/stderr of CMD arrive on this function's stdout/stderr.
boot_guest() {
  local ctl=$1 node=$2 nodes=$3 share=$4 netarg=$5 kver
  kver=$(sed -n 's/^kernel=//p' "$CACHE/ready")
  # qemu opens <path>.in and <path>.out read-write; only .out carries the guest's stderr.
  mkfifo "$ctl/stderr.in" "$ctl/stderr.out" || return 125
  local net=()
  if [ -n "$netarg" ]; then
    net=(-netdev "socket,id=n0,$netarg" -device "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:5$node")
  fi
  local cpus=${SOFTROCE_CPUS:-$((nodes > 2 ? 1 : 2))} mem=${SOFTROCE_MEM:-2048} numa=()
  if [ "${NUMA:-0}" = 1 ]; then
    # Two NUMA nodes, half the memory each; CPU 0 on node 0, the others on node 1 (with one
    # CPU, node 1 is memory only), as a two-socket host whose NIC hangs off one socket.
    local half=$((mem / 2)) node1_cpus=""
    [ "$cpus" -gt 1 ] && node1_cpus=",cpus=1-$((cpus - 1))"
    numa=(-object "memory-backend-ram,id=m0,size=${half}M" -object "memory-backend-ram,id=m1,size=$((mem - half))M"
      -numa "node,nodeid=0,memdev=m0,cpus=0" -numa "node,nodeid=1,memdev=m1$node1_cpus")
  fi
  # mitigations=off: the guest is a throwaway test device, not a security boundary, and its
  # retpolines and RSB filling cost 5-15 % of emulated time (forks, verbs system calls) here.
  # SOFTROCE_KERNEL_ARGS replaces it (empty: the kernel's defaults).
  qemu-system-x86_64 -accel tcg -cpu max -smp "$cpus" -m "$mem" "${numa[@]}" \
    -nodefaults -no-user-config -display none -monitor none -no-reboot \
    -kernel "$CACHE/kernel/boot/vmlinuz-$kver" -initrd "$CACHE/initramfs.img" \
    -append "console=ttyS2 quiet loglevel=3 panic=1 rdinit=/init ${SOFTROCE_KERNEL_ARGS-mitigations=off}" \
    -chardev stdio,id=out,signal=off -serial chardev:out \
    -chardev pipe,id=err,path="$ctl/stderr" -serial chardev:err \
    -chardev file,id=con,path="$ctl/console.log" -serial chardev:con \
    -fsdev local,id=fs0,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=fs0,mount_tag=root \
    -fsdev local,id=fs1,path="$ctl",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=fs1,mount_tag=ctl \
    -fsdev local,id=fs2,path="$share",security_model=none,multidevs=remap \
    -device virtio-9p-pci,fsdev=fs2,mount_tag=share \
    "${net[@]}" </dev/null &
  local qemu=$!
  cat "$ctl/stderr.out" >&2 &
  local reader=$!
  # Forward a stop to the guest's qemu so that no emulator outlives the run.
  trap 'kill $qemu 2>/dev/null' TERM INT HUP
  wait $qemu
  local rc=$?
  # Opening read-write never blocks; closing lets the reader see EOF even if qemu never opened the pipe.
  exec 4<>"$ctl/stderr.out"; exec 4>&-
  wait $reader
  return $rc
}

guest_report() {
  local ctl=$1 label=$2
  if [ ! -f "$ctl/booted" ]; then
    if [ -s "$ctl/console.log" ]; then
      echo "$PROG: ${label}guest did not come up; last console lines:" >&2
      tail -n 15 "$ctl/console.log" >&2
    else
      echo "$PROG: ${label}guest did not come up and its kernel printed nothing (SOFTROCE_MEM=${SOFTROCE_MEM:-2048} MiB too small? a broken kernel in $CACHE? rerun setup)" >&2
    fi
  elif [ -f "$ctl/rc" ]; then
    note "${label}guest up in $(cat "$ctl/booted") s"
  fi
}

run_vm() {
  local nodes=$1 share=$2 timeout=$3; shift 3
  [ -f "$CACHE/ready" ] || die "the testbed is not set up: run bench_scripts/softroce.sh setup"
  command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found: run bench_scripts/softroce.sh setup"
  mkdir -p "$CACHE/runs" || die "cannot write to $CACHE"
  local ctls=() n
  for ((n = 0; n < nodes; n++)); do
    ctls[n]=$(mktemp -d "$CACHE/runs/run.XXXXXX") || die "cannot write to $CACHE/runs (disk full?)"
    write_stage2 "${ctls[n]}" "$n" "$nodes" "$share" || die "cannot write to ${ctls[n]} (disk full?)"
    write_cmd "${ctls[n]}" "$nodes" "$@" || die "cannot write to ${ctls[n]} (disk full?)"
  done
  if [ "${SSHD:-0}" = 1 ]; then
    [ -x "$CACHE/sshd/usr/sbin/sshd" ] || die "sshd is not in the testbed: rerun bench_scripts/softroce.sh setup"
    SSHD_KEYS=$(mktemp -d "$CACHE/runs/keys.XXXXXX") || die "cannot write to $CACHE/runs"
    ssh-keygen -q -t ed25519 -N '' -f "$SSHD_KEYS/id" && ssh-keygen -q -t ed25519 -N '' -f "$SSHD_KEYS/host" ||
      die "ssh-keygen failed"
    for ((n = 0; n < nodes; n++)); do write_cmd "${ctls[n]}" "$nodes" "$@" || die "cannot write to ${ctls[n]}"; done
  fi
  note "path 3: qemu guest x$nodes"
  local start=$SECONDS rc
  if [ "$nodes" = 1 ]; then
    run_with_timeout "$timeout" bash -c "$(declare -f boot_guest); CACHE='$CACHE'; NUMA='${NUMA:-0}'; boot_guest '${ctls[0]}' 0 1 '$share' ''"
    rc=$?
    guest_report "${ctls[0]}" ""
    if [ $rc != 124 ] && [ $rc != 137 ]; then
      rc=$(cat "${ctls[0]}/rc" 2>/dev/null || echo 125)
    fi
  else
    # One Ethernet segment for all guests: each qemu joins the same multicast group on the host's
    # loopback (a hub: every frame reaches every guest). A random group and port keep concurrent
    # runs apart.
    local seg="mcast=239.255.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)):$((20000 + RANDOM % 40000)),localaddr=127.0.0.1"
    local script="$(declare -f boot_guest); CACHE='$CACHE'; NUMA='${NUMA:-0}'; pids=()"
    for ((n = 0; n < nodes; n++)); do
      script+="
      boot_guest '${ctls[n]}' $n $nodes '$share' '$seg' \
        > >(sed -u 's/^/[node$n] /') 2> >(sed -u 's/^/[node$n] /' >&2) &
      pids+=(\$!)"
    done
    script+='
      for p in "${pids[@]}"; do wait "$p"; done'
    run_with_timeout "$timeout" bash -c "$script"
    rc=$?
    for ((n = 0; n < nodes; n++)); do guest_report "${ctls[n]}" "node$n "; done
    if [ $rc != 124 ] && [ $rc != 137 ]; then
      local r
      rc=0
      for ((n = 0; n < nodes; n++)); do
        r=$(cat "${ctls[n]}/rc" 2>/dev/null || echo 125)
        [ "$rc" = 0 ] && rc=$r
      done
    fi
  fi
  note "run took $((SECONDS - start)) s"
  rm -rf "${ctls[@]}" ${SSHD_KEYS:+"$SSHD_KEYS"}
  return "$rc"
}

cmd_run() {
  local nodes=1 share=./target/softroce-share timeout=600
  while [ $# -gt 0 ]; do
    case $1 in
      --nodes) nodes=${2:-}; shift 2 || die "--nodes needs a value" ;;
      --nodes=*) nodes=${1#*=}; shift ;;
      --sshd) SSHD=1; shift ;;
      --numa) NUMA=1; shift ;;
      --siw) SIW=1; shift ;;
      --ipv6-only) IPV6_ONLY=1; shift ;;
      --share) share=${2:-}; shift 2 || die "--share needs a value" ;;
      --share=*) share=${1#*=}; shift ;;
      --timeout) timeout=${2:-}; shift 2 || die "--timeout needs a value" ;;
      --timeout=*) timeout=${1#*=}; shift ;;
      --) shift; break ;;
      -h | --help) usage; exit 0 ;;
      *) die "unknown option '$1' (usage: softroce.sh run [--nodes 1-4] [--sshd] [--numa] [--siw] [--ipv6-only] [--share DIR] [--timeout SECS] -- CMD)" ;;
    esac
  done
  [ $# -gt 0 ] || die "no command given (usage: softroce.sh run [options] -- CMD [ARGS...])"
  [[ $nodes =~ ^[1-4]$ ]] || die "--nodes must be 1, 2, 3 or 4, not '$nodes'"
  [[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, not '$timeout'"
  if [ "${SIW:-0}" = 1 ]; then
    [ "$nodes" = 1 ] || die "--siw: one node only (siw0 runs on the guest's own dummy1, $SIW_NET.1)"
    [ -s "$CACHE/modules.siw" ] || die "--siw: siw.ko is not in the testbed (setup could not build it; its warning says why): rerun bench_scripts/softroce.sh setup"
    [ "${IPV6_ONLY:-0}" = 1 ] && die "--siw with --ipv6-only: siw0's netdev has an IPv4 address only; run them apart"
  fi
  mkdir -p "$share" || die "cannot create the share directory $share"
  share=$(cd "$share" && pwd -P)

  if [ "${SOFTROCE_VM:-0}" != 1 ] && [ "$nodes" = 1 ] && [ "${SSHD:-0}" != 1 ] && [ "${NUMA:-0}" != 1 ] &&
    [ "${SIW:-0}" != 1 ] && [ "${IPV6_ONLY:-0}" != 1 ]; then
    local dev
    dev=$(host_active_device)
    if [ -n "$dev" ]; then
      read -r d g ip <<<"$dev"
      note "path 1: host device $d, gid index $g"
      SOFTROCE_INSIDE=1 RDMA_BENCH_DEVICE=$d RDMA_BENCH_GID_INDEX=$g RDMA_BENCH_IP=$ip run_with_timeout "$timeout" "$@"
      exit $?
    fi
    if [ "$(id -u)" = 0 ]; then
      run_host_rxe "$timeout" "$@"
      local rc=$?
      [ $rc = 200 ] || exit $rc
    fi
  fi
  run_vm "$nodes" "$share" "$timeout" "$@"
  exit $?
}

case ${1:-} in
  setup) shift; [ $# = 0 ] || die "setup takes no arguments"; cmd_setup ;;
  run) shift; cmd_run "$@" ;;
  "" | -h | --help | help) usage; [ $# -gt 0 ] || exit 2 ;;
  *) usage >&2; die "unknown verb '$1'" ;;
esac
