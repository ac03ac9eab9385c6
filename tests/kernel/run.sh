#!/usr/bin/env bash
# run.sh - make test-kernel: boots Debian 12's stock kernel (build/kernel/current, unpacked by
# scripts/kernel-deps.sh) under qemu-system-x86_64 and runs test suites there as root.
#
# The guest's root is the host's / as a read-only 9p export with a tmpfs overlay on top, so
# it runs this work tree's build/ with the host's tools, and every file a test makes stays in
# the guest's memory. On the host, only build/kernel/ is written (the initramfs, guest.env,
# console.log). The guest's console is the report: its suite lines are printed here, then
# one closing "N passed, N failed" line. Exit status 0 only if the guest ran every suite and
# all passed; a guest that hangs is killed after the timeout and counts as a failure.
#
#   DT_KERNEL_SUITES   run_all.sh --suites list (bpf,netns); none: no suite (DT_KERNEL_RUN alone)
#   DT_KERNEL_RUN      a command line the guest runs first, as root in the work tree (e.g.
#                      "build/bench multi"), its output shown here as "run| " lines; a failure
#                      (non-zero exit) counts as one failed suite
#   DT_KERNEL_TIMEOUT  seconds for the whole VM run (2400 under KVM; 7200 under TCG, where every
#                      netns suite takes about an hour; 3600 for another architecture)
#   DT_SCRIPT_TIMEOUT  seconds for each shell suite in the guest (900 under KVM, 1500 under
#                      TCG); the guest's DT_EMULATED is 1 under TCG
#   DT_KERNEL_ACCEL    kvm or tcg (kvm if a probe boot under /dev/kvm works, else tcg)
#   DT_KERNEL_SKIP     suites not run, each reported as SKIP with the reason (under TCG:
#                      test_adaptive, test_escalation and test_escalation_cluster, whose
#                      100 ms samples and 350 ms bounds emulation cannot keep; under KVM:
#                      none); DT_KERNEL_SKIP= runs everything
#   DT_KERNEL_MEM      guest memory (4G); the guest gets every host CPU, at least 2, at most 4
#   DT_KERNEL_CPU      qemu's CPU model under TCG (qemu64)
#   DT_KERNEL_KARGS    more kernel command-line arguments (e.g. clocksource=tsc)
#   DT_SYNCOOKIE_*     passed to the guest for test_syncookies (its flood rate, its connects)
#
# tests/kernel/run.sh ARCH (make test-kernel ARCH=arm64): another architecture's kernel
# (build/ARCH/kernel) under its qemu, TCG only. Its root cannot be the host's /: it is
# build/ARCH/rootfs (Debian's ARCH packages, scripts/kernel-deps.sh ARCH) read-only, and the
# work tree is a second 9p export under its own tmpfs overlay, build/ARCH mounted on build/,
# so the suites run build/ARCH's programs where they expect build/'s. There, the defaults:
# DT_KERNEL_SUITES unit,bpf,netns and DT_KERNEL_SKIP every netns suite but a few
# (arm64_suites below): all of them would take hours of emulation; each is listed as skipped.
# DT_KERNEL_CPU is max,pauth-impdef=on (LSE atomics for the BPF JIT; cheap pointer auth).
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

native=$(dpkg --print-architecture 2>/dev/null || echo amd64)
arch=${1:-$native}
if [ "$arch" = "$native" ]; then
  KDIR=build/kernel
  BUILD=build
  qemu=qemu-system-x86_64
  qemu_pkg=qemu-system-x86
  console_dev=ttyS0
  machine_args=()
  suites=${DT_KERNEL_SUITES:-bpf,netns}
else
  [ "$arch" = arm64 ] || { echo "test-kernel: no guest for $arch (amd64, arm64)" >&2; exit 1; }
  KDIR=build/$arch/kernel
  BUILD=build/$arch
  ROOTFS=build/$arch/rootfs
  qemu=qemu-system-aarch64
  qemu_pkg=qemu-system-arm
  console_dev=ttyAMA0
  machine_args=(-M virt)
  suites=${DT_KERNEL_SUITES:-unit,bpf,netns}
  # The netns suites run there by default: one host throttled with real packets, a byte
  # budget over multi-buffer XDP at MTU 9000, and a cluster of agents trading signed reports
  # over ZeroMQ (test_cluster alone takes about 950 s emulated: longer limits below).
  arm64_suites="test_throttle test_jumbo test_cluster"
fi
mem=${DT_KERNEL_MEM:-4G}
console=$KDIR/console.log

# not_run REASON: the guest could not run at all; this is the closing line.
not_run() {
  echo "test-kernel: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

[ "$(id -u)" -eq 0 ] || not_run "needs root (qemu exports / to the guest; the suites load BPF)"
command -v $qemu >/dev/null ||
  not_run "no $qemu: run scripts/kernel-deps.sh $arch (apt-get install $qemu_pkg)"
command -v busybox >/dev/null ||
  not_run "no busybox: run scripts/kernel-deps.sh (apt-get install busybox-static)"
[ -e "$KDIR/current/.complete" ] ||
  not_run "no kernel in $KDIR/current: run scripts/kernel-deps.sh $arch (unpacks linux-image-$arch)"
[ -z "${ROOTFS:-}" ] || [ -e "$ROOTFS/.complete" ] ||
  not_run "no $arch root file system in $ROOTFS: run scripts/kernel-deps.sh $arch"
case $repo in *[[:space:]]*) not_run "the work tree's path has a blank: $repo" ;; esac
[ -x $BUILD/bpf_tests ] && [ -x $BUILD/agent ] || not_run "$BUILD/ is not built: run make${ROOTFS:+ ARCH=$arch}"

# The guest has no network: what a suite would download, the host fetches now (CrowdSec's
# package, unpacked in build/crowdsec for test_crowdsec and test_crowdsec_cluster). Without it
# those suites skip, saying why.
if [ -z "${ROOTFS:-}" ] && [[ ",$suites," == *,netns,* || "$suites" == *crowdsec* ]]; then
  scripts/crowdsec_lab.sh fetch >/dev/null ||
    echo "test-kernel: CrowdSec's package could not be fetched here: test_crowdsec and test_crowdsec_cluster will skip" >&2
fi

kver=$(readlink "$KDIR/current")
kernel=$KDIR/$kver/boot/vmlinuz-$kver
moddir=$KDIR/$kver/lib/modules/$kver

# --- the initramfs: busybox, the modules that mount the 9p root, /init ---------------------
build_initramfs() {
  local root m f
  root=$(mktemp -d "$KDIR/initramfs.XXXXXX")
  mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/lib/modules/$kver"
  # The guest's busybox: the host's, or the static one of the other architecture's root.
  if [ -n "${ROOTFS:-}" ]; then
    cp "$ROOTFS/bin/busybox" "$root/bin/busybox"
  else
    cp "$(command -v busybox)" "$root/bin/busybox"
  fi
  for a in sh mount umount modprobe insmod switch_root reboot sleep cat mkdir uname; do
    ln -s busybox "$root/bin/$a"
  done
  # The modules /init loads and everything they depend on (modules.dep, made by kernel-deps).
  # One the kernel has built in (virtio_pci on arm64) is neither copied nor loaded.
  local want="virtio_pci 9pnet_virtio 9p overlay" todo=() seen=" " load=""
  for m in $want; do
    grep -q "/$m.ko\$" "$moddir/modules.builtin" 2>/dev/null && continue
    load="$load $m"
    todo+=("$(awk -v m="/$m.ko:" 'index($0, m) { print $1; exit }' "$moddir/modules.dep")")
  done
  echo "$load" >"$root/modules"
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]%:}; todo=("${todo[@]:1}")
    [ -n "$f" ] || { rm -rf "$root"; return 1; }
    case $seen in *" $f "*) continue ;; esac
    seen="$seen$f "
    mkdir -p "$root/lib/modules/$kver/$(dirname "$f")"
    cp "$moddir/$f" "$root/lib/modules/$kver/$f"
    # shellcheck disable=SC2207
    todo+=($(awk -v f="$f:" '$1 == f { $1 = ""; print; exit }' "$moddir/modules.dep"))
  done
  grep -E "^($(echo "$seen" | xargs | tr ' ' '|')):" "$moddir/modules.dep" >"$root/lib/modules/$kver/modules.dep"
  cp tests/kernel/initramfs_init.sh "$root/init"
  chmod 0755 "$root/init"
  (cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$KDIR/initrd.img.tmp" &&
    mv "$KDIR/initrd.img.tmp" "$KDIR/initrd.img"
  local rc=$?
  rm -rf "$root"
  return $rc
}
build_initramfs || not_run "cannot build the initramfs from $moddir (9p, virtio, overlay modules)"

# --- accelerator: KVM when this machine offers a working one, else TCG (pure emulation) -----
# /dev/kvm may be there and still not run a guest (nested virtualisation without the CPU
# features: qemu aborts, or the kernel hangs at boot): a short probe boot decides.
kvm_args=(-accel kvm -cpu host)
# qemu64, not max, under TCG: the BPF suite took 74 s instead of 104 (max adds features that
# are slow to emulate); DT_KERNEL_CPU picks another model.
tcg_args=(-accel tcg,thread=multi -cpu "${DT_KERNEL_CPU:-qemu64}")
kvm_boots() {
  [ -c /dev/kvm ] || return 1
  timeout -k 5 20 qemu-system-x86_64 "${kvm_args[@]}" -m 256M -nodefaults -no-user-config \
    -display none -no-reboot -serial stdio -monitor none \
    -kernel "$kernel" -initrd "$KDIR/initrd.img" -append "console=ttyS0 quiet panic=-1 dt_probe" \
    </dev/null 2>&1 | grep -q '^test-kernel: probe booted'
}
accel=${DT_KERNEL_ACCEL:-}
if [ -n "${ROOTFS:-}" ]; then
  # Another architecture: emulation only. qemu's max CPU has LSE atomics, which the arm64 BPF
  # JIT uses for the programs' atomic adds (ARMv8.0 cores take its LL/SC path instead).
  accel=${accel:-tcg}
  [ "$accel" = tcg ] || not_run "an $arch guest on $native runs under TCG only, not $accel"
  tcg_args=(-accel tcg,thread=multi -cpu "${DT_KERNEL_CPU:-max,pauth-impdef=on}")
elif [ -z "$accel" ]; then
  if kvm_boots; then accel=kvm; else accel=tcg; fi
fi
case $accel in
  kvm) accel_args=("${kvm_args[@]}") ;;
  tcg) accel_args=("${tcg_args[@]}") ;;
  *) not_run "DT_KERNEL_ACCEL must be kvm or tcg, not $accel" ;;
esac
if [ -n "${ROOTFS:-}" ]; then default_timeout=3600
elif [ "$accel" = tcg ]; then default_timeout=7200
else default_timeout=2400
fi
vm_timeout=${DT_KERNEL_TIMEOUT:-$default_timeout}
# Each shell suite's limit: test_cluster took 381 s emulated on a quiet machine and over 900 s
# beside other work.
script_timeout=${DT_SCRIPT_TIMEOUT:-$([ "$accel" = kvm ] && echo 900 || echo 1500)}
# Timing-heavy suites cannot hold their deadlines under emulation (test_adaptive: 473 s
# instead of 30, its 100 ms sampler misses most samples; the escalation suites, whose bans
# must land within 350 ms of an offence's 2 s: 1.1-2.1 s emulated, and the flood was not
# banned within 15 s on one host): reported as skipped, never hidden.
if [ -n "${ROOTFS:-}" ]; then
  default_skip=$(for s in tests/netns/test_*.sh; do
    s=$(basename "$s" .sh)
    case " $arm64_suites " in *" $s "*) ;; *) echo "$s" ;; esac
  done | xargs)
  skip=${DT_KERNEL_SKIP-$default_skip}
  skip_reason="not in the $arch guest's default set ($arm64_suites): TCG emulation of another CPU would take hours for all; DT_KERNEL_SUITES and DT_KERNEL_SKIP= run more"
elif [ "$accel" = tcg ]; then
  skip=${DT_KERNEL_SKIP-test_adaptive test_escalation test_escalation_cluster}
  skip_reason="timing-heavy (100 ms samples, bans within 350 ms): cannot hold its timings under TCG emulation; it runs when KVM works (or DT_KERNEL_SKIP= to force it)"
else
  skip=${DT_KERNEL_SKIP-}
  skip_reason="skipped by DT_KERNEL_SKIP"
fi
[ "$suites" = none ] && skip=   # no suite to skip: the command alone
clock_args=${DT_KERNEL_KARGS-}
cpus=$(nproc); [ "$cpus" -gt 4 ] && cpus=4
[ "$cpus" -ge 2 ] || cpus=2   # the XDP tests hammer from several CPUs

# --- what the guest reads: the caller's PATH and HOME, the suites, a longer script timeout --
{
  printf 'export PATH=%q\n' "$PATH"
  printf 'export HOME=%q\n' "${HOME:-/root}"
  printf 'DT_SUITES=%q\n' "$suites"
  printf 'DT_SKIP=%q\n' "$skip"
  printf 'DT_SKIP_REASON=%q\n' "$skip_reason"
  printf 'DT_RUN=%q\n' "${DT_KERNEL_RUN-}"
  # TCG runs everything several times slower: give each shell suite more than make test's 300 s.
  printf 'export DT_SUITE_TIMES=1\n'
  printf 'export DT_SCRIPT_TIMEOUT=%q\n' "$script_timeout"
  # Whether the CPU is emulated (TCG): a suite whose bounds assume a real CPU's speed says so.
  printf 'export DT_EMULATED=%q\n' "$([ "$accel" = tcg ] && echo 1 || echo 0)"
  # test_syncookies' own knobs (DT_SYNCOOKIE_CONNS, DT_SYNCOOKIE_FLOOD_PPS), as the caller set them.
  for v in $(compgen -v DT_SYNCOOKIE_); do printf 'export %s=%q\n' "$v" "${!v}"; done
} >"$KDIR/guest.env"

echo "test-kernel: booting Debian's kernel $kver ($arch, $accel, $cpus CPUs, $mem) to run: $suites"
[ -z "${DT_KERNEL_RUN-}" ] || echo "test-kernel: and first, in the guest: ${DT_KERNEL_RUN}"
[ -z "$skip" ] || echo "test-kernel: not run ($accel): $skip: $skip_reason"
if [ -n "${ROOTFS:-}" ]; then
  # The other architecture's root, and the work tree as its own export (tag repo).
  root_path=$repo/$ROOTFS
  repo_args=(-fsdev "local,id=repo,path=$repo,security_model=none,readonly=on,multidevs=remap"
             -device virtio-9p-pci,fsdev=repo,mount_tag=repo)
  repo_kargs="dt_repo9p dt_build=$BUILD"
  echo "test-kernel: the guest's root is $ROOTFS read-only (9p), the work tree another 9p" \
       "export with $BUILD on build/, each under a tmpfs overlay; killed after ${vm_timeout} s"
else
  root_path=/
  repo_args=()
  repo_kargs=
  echo "test-kernel: the guest's root is the host's / read-only (9p) under a tmpfs overlay;" \
       "the whole run is killed after ${vm_timeout} s"
fi
start=$(date +%s)
# The console goes to $KDIR/console.log (and here, as it comes: the suite lines).
timeout -k 10 "$vm_timeout" $qemu \
  "${machine_args[@]}" "${accel_args[@]}" -smp "$cpus" -m "$mem" \
  -nodefaults -no-user-config -display none -no-reboot \
  -serial stdio -monitor none \
  -kernel "$kernel" -initrd "$KDIR/initrd.img" \
  -append "console=$console_dev quiet panic=-1 $clock_args dt_repo=$repo $repo_kargs" \
  -fsdev "local,id=rootfs,path=$root_path,security_model=none,readonly=on,multidevs=remap" \
  -device virtio-9p-pci,fsdev=rootfs,mount_tag=root \
  "${repo_args[@]}" \
  </dev/null 2>&1 | sed -u 's/\r$//' | tee "$console" | grep --line-buffered -E \
    '^(== |   |test-kernel: |run[|] |[0-9]+ passed, [0-9]+ failed|failed suites:|  [^ ]|PASS |FAIL |\[ *[0-9.]+\] )'
qemu_rc=${PIPESTATUS[0]}
elapsed=$(($(date +%s) - start))

total=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$console" | tail -1)
status=$(sed -n 's/^test-kernel: guest status \([0-9]*\)$/\1/p' "$console" | tail -1)
echo
if [ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ]; then
  echo "test-kernel: TIMEOUT: the guest did not finish in ${vm_timeout} s; qemu was killed" \
       "(console: $console)"
fi
if [ -z "$total" ] || [ -z "$status" ]; then
  echo "test-kernel: the guest did not report a result (qemu exit $qemu_rc after ${elapsed} s);" \
       "last console lines ($console):"
  tail -20 "$console" | sed 's/^/   | /'
  p=0; f=0
  [ -n "$total" ] && { p=${total%% passed*}; f=${total#*, }; f=${f%% failed*}; }
  echo "$p passed, $((f + 1)) failed"
  exit 1
fi
echo "test-kernel: Linux $kver ($arch) under qemu ($accel): $suites in ${elapsed} s"
[ "$status" -eq 0 ] || echo "test-kernel: the failed suites' logs are in $console (lines 'log| ')"
echo "$total"
[ "$status" -eq 0 ]
