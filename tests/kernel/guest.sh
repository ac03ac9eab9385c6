#!/bin/bash
# guest.sh - PID 1 of the test-kernel guest, after the initramfs's switch_root: mounts what a
# booted system has (proc, sys, bpffs, devpts, tmpfs /run and /tmp), loads the kernel modules
# the suites need from build/kernel/<version>/lib/modules, runs the suites with
# tests/run_all.sh as root and powers the VM off. Its console (ttyS0) is the host's report:
# the suite lines, then "test-kernel: guest status N". Everything runs over the tmpfs
# overlay of the read-only 9p root: no write reaches the host.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
repo=$(cd "$(dirname "$0")/../.." && pwd)

off() {
	sync
	echo "test-kernel: guest powering off"
	busybox reboot -f
	sleep 5
	echo b >/proc/sysrq-trigger
}
trap off EXIT

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# Fresh /run and /tmp, unless the tree itself lives there (a clone in /tmp): a tmpfs would
# hide it, and the overlay's own /tmp is writable all the same.
case "$repo/" in
/run/*) ;;
*) mount -t tmpfs -o mode=0755 tmpfs /run ;;
esac
case "$repo/" in
/tmp/*) ;;
*) mount -t tmpfs -o mode=1777 tmpfs /tmp ;;
esac
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# devtmpfs has no /dev/fd (udev makes it on a booted system): bash's process substitution
# (`done < <(cmd)`, in several suites) reads /dev/fd/N.
for n in fd:/proc/self/fd stdin:/proc/self/fd/0 stdout:/proc/self/fd/1 stderr:/proc/self/fd/2; do
	[ -e "/dev/${n%%:*}" ] || ln -s "${n#*:}" "/dev/${n%%:*}"
done
hostname dthrottle-guest
ip link set lo up

# The caller's settings (PATH, HOME, suites, timeouts), written by tests/kernel/run.sh.
# shellcheck source=/dev/null
. "$repo/build/kernel/guest.env" || { echo "test-kernel: no $repo/build/kernel/guest.env"; exit 1; }
kver=$(uname -r)
echo "test-kernel: guest up: Linux $kver, $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)," \
	"clock $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)," \
	"BPF JIT $(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo unknown)" \
	"($(uname -m)$(grep -qw atomics /proc/cpuinfo && echo ', LSE atomics'))"

# The image package ships its modules under build/kernel; the host has none for this kernel.
# Both module directories: /lib is not /usr/lib in another architecture's root (no usrmerge).
for d in /usr/lib/modules /lib/modules; do
	mkdir -p "$d"
	[ -e "$d/$kver" ] || ln -sfn "$repo/build/kernel/$kver/lib/modules/$kver" "$d/$kver"
done
# The kernel asks /sbin/modprobe for the modules it wants on first use (bridge for
# `ip link add type bridge`, inet_diag for NETLINK_SOCK_DIAG, qdiscs for tc...); the host
# has no kmod for this tree: busybox's modprobe answers instead (modules.alias, modules.dep).
printf '#!/bin/sh\nexec busybox modprobe "$@"\n' >/run/modprobe
chmod 0755 /run/modprobe
echo /run/modprobe >/proc/sys/kernel/modprobe
# Loaded up front all the same: veth (every lab), bridge (the multi-host lab),
# inet_diag/tcp_diag (the adaptive suite's listen-queue watch), sch_ingress/cls_bpf/act_bpf
# (the tc attach mode).
for m in veth bridge inet_diag tcp_diag udp_diag sch_ingress cls_bpf act_bpf; do
	busybox modprobe "$m" || echo "test-kernel: cannot load kernel module $m"
done

cd "$repo" || exit 1
start=$(date +%s)
# DT_KERNEL_RUN's command first (a bench, a look with bpftool), its lines marked for the host.
run_rc=0
if [ -n "${DT_RUN:-}" ]; then
	echo "test-kernel: running $DT_RUN"
	bash -c "$DT_RUN" 2>&1 | sed -u 's/^/run| /'
	run_rc=${PIPESTATUS[0]}
	echo "test-kernel: exit status $run_rc of $DT_RUN"
fi
skip_args=()
[ -z "$DT_SKIP" ] || skip_args=(--skip "$DT_SKIP" --skip-reason "$DT_SKIP_REASON")
if [ "$DT_SUITES" = none ]; then
	# The command alone: it is the one suite of the closing line.
	echo "$((run_rc == 0)) passed, $((run_rc != 0)) failed" | tee /run/run_all.out
	rc=$run_rc
else
	# One shell suite at a time: under TCG two at once would starve the timing-heavy ones.
	DT_TEST_JOBS=1 tests/run_all.sh --suites "$DT_SUITES" "${skip_args[@]}" | tee /run/run_all.out
	rc=${PIPESTATUS[0]}
	[ "$run_rc" -eq 0 ] || { echo "test-kernel: the command failed: $DT_RUN"; rc=1; }
fi
# The logs of failed suites live in the guest's /tmp and die with it: copy them to the
# console (the host keeps it in build/kernel/console.log; only the suite lines are shown).
sed -n 's/^  .* (log: \(.*\))$/\1/p' /run/run_all.out | while read -r log; do
	echo "test-kernel: log of a failed suite follows: $log"
	sed 's/^/log| /' "$log"
done
echo "test-kernel: guest ran suites $DT_SUITES in $(($(date +%s) - start)) s"
echo "test-kernel: guest status $rc"
