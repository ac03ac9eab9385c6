#!/bin/busybox sh
# initramfs_init.sh - /init of test-kernel's initramfs (busybox sh, in the guest): loads the
# 9p and overlay modules the cpio carries, mounts the host's / (a read-only 9p export) under
# a tmpfs overlay, and switch_roots into tests/kernel/guest.sh of the work tree (dt_repo= on
# the kernel command line). Every write of the guest lands in that tmpfs, none on the host.
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

for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe "$m" || stop "cannot load module $m ($(uname -r))"
done

repo=
for arg in $(cat /proc/cmdline); do
	case $arg in dt_repo=*) repo=${arg#dt_repo=} ;; esac
done
[ -n "$repo" ] || stop "no dt_repo= on the kernel command line"

mkdir -p /lower /rw /newroot
# The 9p device may still be probing right after the module loads: retry for a few seconds.
i=0
until mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose root /lower; do
	i=$((i + 1))
	[ "$i" -lt 20 ] || stop "cannot mount the host's / (9p tag root)"
	sleep 0.5
done
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	stop "cannot mount the overlay (tmpfs over the 9p root)"
[ -x "/newroot$repo/tests/kernel/guest.sh" ] || stop "no $repo/tests/kernel/guest.sh in the host's /"

mount --move /dev /newroot/dev
umount /sys /proc
exec switch_root /newroot /bin/bash "$repo/tests/kernel/guest.sh"
