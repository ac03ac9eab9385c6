#!/bin/busybox sh
# initramfs_init.sh - /init of test-kernel's initramfs (busybox sh, in the guest): loads the
# 9p and overlay modules the cpio carries, mounts the host's / (a read-only 9p export) under
# a tmpfs overlay, and switch_roots into tests/kernel/guest.sh of the work tree (dt_repo= on
# the kernel command line). Every write of the guest lands in that tmpfs, none on the host.
# Another architecture's guest (dt_repo9p): the root is its own file system, and the work tree
# comes as a second 9p export (tag repo), under an overlay of its own at the same path, with
# dt_build= (build/arm64) mounted on its build/.
export PATH=/bin

stop() {  # the guest cannot be set up: say why on the console and end the VM
	echo "test-kernel: guest setup failed: $*"
	reboot -f
	sleep 5
	echo b >/proc/sysrq-trigger
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

# dt_probe: run.sh only asks whether this accelerator boots a kernel at all.
case " $(cat /proc/cmdline) " in *" dt_probe "*)
	echo "test-kernel: probe booted"
	reboot -f ;;
esac

for m in $(cat /modules); do
	modprobe "$m" || stop "cannot load module $m ($(uname -r))"
done

repo=
repo9p=
build=
for arg in $(cat /proc/cmdline); do
	case $arg in
	dt_repo=*) repo=${arg#dt_repo=} ;;
	dt_repo9p) repo9p=1 ;;
	dt_build=*) build=${arg#dt_build=} ;;
	esac
done
[ -n "$repo" ] || stop "no dt_repo= on the kernel command line"

mkdir -p /lower /rw /newroot
# The 9p device may still be probing right after the module loads: retry for a few seconds.
mount9p() {  # TAG DIR
	i=0
	until mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose "$1" "$2"; do
		i=$((i + 1))
		[ "$i" -lt 20 ] || stop "cannot mount the host's export (9p tag $1)"
		sleep 0.5
	done
}
mount9p root /lower
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	stop "cannot mount the overlay (tmpfs over the 9p root)"
if [ -n "$repo9p" ]; then
	mkdir -p /repo /rw/repo-upper /rw/repo-work "/newroot$repo"
	mount9p repo /repo
	mount -t overlay -o lowerdir=/repo,upperdir=/rw/repo-upper,workdir=/rw/repo-work overlay "/newroot$repo" ||
		stop "cannot mount the overlay (tmpfs over the 9p work tree)"
	if [ -n "$build" ]; then
		mount --bind "/newroot$repo/$build" "/newroot$repo/build" || stop "cannot mount $build on build/"
	fi
fi
[ -x "/newroot$repo/tests/kernel/guest.sh" ] || stop "no $repo/tests/kernel/guest.sh in the host's /"

mount --move /dev /newroot/dev
umount /sys /proc
exec switch_root /newroot /bin/bash "$repo/tests/kernel/guest.sh"
