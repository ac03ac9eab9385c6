#!/usr/bin/env bash
# kernel-deps.sh - what `make test-kernel` needs: qemu and busybox from apt, and Debian 12's
# stock kernel (the image package that linux-image-amd64 depends on) unpacked into
# build/kernel/ with `apt-get download` + `dpkg-deb -x`: nothing is installed system-wide
# for the kernel, the host's boot is untouched. Idempotent: quick and offline once done.
#
#   build/kernel/<version>/boot/vmlinuz-<version>      the kernel the guest boots
#   build/kernel/<version>/lib/modules/<version>/      its modules (+ modules.dep, busybox depmod)
#   build/kernel/current -> <version>                  the one test-kernel boots
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/apt_missing.sh

KDIR=build/kernel
META=linux-image-amd64           # Debian's "the stock kernel" metapackage
PACKAGES=(qemu-system-x86 busybox-static)

# --- qemu and busybox (apt) ----------------------------------------------------------------
apt_install_missing kernel-deps 'make test-kernel' "${PACKAGES[@]}"

# --- the kernel (unpacked into build/kernel, never installed) ------------------------------
if [ -e "$KDIR/current/.complete" ]; then
  exit 0
fi
# The image package is whatever the metapackage depends on today (linux-image-6.1.0-N-amd64).
image_pkg() {
  apt-cache depends "$META" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
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
