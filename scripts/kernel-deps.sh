#!/usr/bin/env bash
# kernel-deps.sh - what `make test-kernel` needs: qemu and busybox from apt, and Debian 12's
# stock kernel (the image package that linux-image-amd64 depends on) unpacked into
# build/kernel/ with `apt-get download` + `dpkg-deb -x`: nothing is installed system-wide
# for the kernel, the host's boot is untouched. Idempotent: quick and offline once done.
#
#   build/kernel/<version>/boot/vmlinuz-<version>      the kernel the guest boots
#   build/kernel/<version>/lib/modules/<version>/      its modules (+ modules.dep, busybox depmod)
#   build/kernel/current -> <version>                  the one test-kernel boots
#
#   scripts/kernel-deps.sh [ARCH]   ARCH other than this machine's (arm64 on amd64): the same
#   in build/ARCH/kernel/ (linux-image-ARCH), qemu-system-arm, and the guest's root file
#   system, which cannot be the host's / there: Debian's ARCH packages the suites need,
#   unpacked by mmdebstrap (--variant=extract: no maintainer script runs, so no emulation)
#   into build/ARCH/rootfs/ (rebuilt only when the package list below changes).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt_missing.sh

NATIVE=$(dpkg --print-architecture)
ARCH=${1:-$NATIVE}
if [ "$ARCH" = "$NATIVE" ]; then
  KDIR=build/kernel
  PACKAGES=(qemu-system-x86 busybox-static)
else
  KDIR=build/$ARCH/kernel
  PACKAGES=(qemu-system-arm busybox-static mmdebstrap)
  [ "$ARCH" = arm64 ] || { echo "kernel-deps: no guest for $ARCH (amd64, arm64)" >&2; exit 1; }
fi
META=linux-image-$ARCH:$ARCH     # Debian's "the stock kernel" metapackage
# The guest's root for another architecture: what guest.sh, run_all.sh, the netns labs and
# the programs of build/ARCH need at run time (their libraries: the agent's links).
ROOTFS=build/$ARCH/rootfs
ROOTFS_PACKAGES=(
  bash dash coreutils util-linux mount grep sed mawk findutils diffutils procps kmod hostname gzip
  busybox-static iproute2 nftables socat jq python3 python3-zmq iputils-ping redis-server
  libstdc++6 libbpf1 libelf1 zlib1g libzmq5 libsodium23 libcpp-httplib0.11
  libhiredis0.14 libcap2 libnftables1 libxdp1
)

# --- qemu and busybox (apt) ----------------------------------------------------------------
apt_install_missing kernel-deps "make test-kernel${1:+ ARCH=$1}" "${PACKAGES[@]}"

# --- the guest's root file system (another architecture only) ------------------------------
# A marker holds the package list it was made from: a new list makes a new root.
build_rootfs() {
  local want
  want=$(printf '%s\n' "${ROOTFS_PACKAGES[@]}")
  [ "$(cat "$ROOTFS/.complete" 2>/dev/null)" = "$want" ] && return 0
  echo "kernel-deps: unpacking Debian's $ARCH packages into $ROOTFS (mmdebstrap, extract only)"
  rm -rf "$ROOTFS" "$ROOTFS.tmp"
  mkdir -p "$(dirname "$ROOTFS")"
  mmdebstrap --quiet --variant=extract --arch="$ARCH" \
    --include="$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")" bookworm "$ROOTFS.tmp" || {
    echo "kernel-deps: mmdebstrap could not make the $ARCH root: is the Debian archive reachable?" >&2
    exit 1
  }
  printf '%s\n' "$want" >"$ROOTFS.tmp/.complete"
  mv "$ROOTFS.tmp" "$ROOTFS"
}
# No maintainer script ran: what they would have made (accounts, the awk alternative) and
# the few files a booted system has. Cheap, so done every time.
rootfs_fixups() {
  printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
    >"$ROOTFS/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOTFS/etc/group"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$ROOTFS/etc/hosts"
  ln -sfn mawk "$ROOTFS/usr/bin/awk"
}
if [ "$ARCH" != "$NATIVE" ]; then
  build_rootfs
  rootfs_fixups
fi

# --- the kernel (unpacked into build/kernel, never installed) ------------------------------
if [ -e "$KDIR/current/.complete" ]; then
  exit 0
fi
# The image package is whatever the metapackage depends on today (linux-image-6.1.0-N-amd64).
image_pkg() {
  apt-cache depends "$META" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { sub(/:.*/, "", $2); print $2; exit }'
}
pkg=$(image_pkg)
if [ -z "$pkg" ] && [ "$APT_UPDATED" -eq 0 ] && [ "$(id -u)" -eq 0 ]; then
  apt-get update -q
  pkg=$(image_pkg)
fi
if [ -z "$pkg" ]; then
  echo "kernel-deps: apt knows no $META (the package of Debian's stock kernel):" \
       "run 'apt-get update' as root, with Debian's bookworm archive in the sources" >&2
  exit 1
fi
ver=${pkg#linux-image-}          # 6.1.0-56-amd64: the kernel's release name (uname -r)
pkg=$pkg:$ARCH
dest=$KDIR/$ver
echo "kernel-deps: unpacking $pkg into $dest (apt-get download + dpkg-deb -x, nothing installed)"
rm -rf "$dest" "$dest.tmp"
mkdir -p "$dest.tmp"
# apt's download sandbox user (_apt) may not be able to write into the work tree: download as
# the caller (root or not), into build/ only.
(cd "$dest.tmp" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg") || {
  echo "kernel-deps: cannot download $pkg (apt-get download): is the Debian archive reachable?" >&2
  exit 1
}
deb=$(ls "$dest.tmp"/*.deb)
dpkg-deb -x "$deb" "$dest.tmp"
rm -f "$deb"
[ -f "$dest.tmp/boot/vmlinuz-$ver" ] && [ -d "$dest.tmp/lib/modules/$ver" ] || {
  echo "kernel-deps: $pkg holds no boot/vmlinuz-$ver and lib/modules/$ver" >&2
  exit 1
}
# The package ships no modules.dep (its postinst runs depmod): busybox makes one here.
busybox depmod -b "$dest.tmp" "$ver"
mv "$dest.tmp" "$dest"
ln -sfn "$ver" "$KDIR/current"
touch "$dest/.complete"
echo "kernel-deps: Debian's stock kernel $ver ready in $dest"
