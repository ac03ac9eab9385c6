#!/usr/bin/env bash
# deps.sh - the Debian packages dthrottle needs, by what needs them.
#
#   scripts/deps.sh [--check] [GROUP...]     (no GROUP: all)
#
#   agent   what build/agent and build/pktgen need to build (compilers, libbpf, ZeroMQ...)
#   build   agent, and what the tests and the fuzzer need to build: all that plain `make` builds
#   demo    agent, and what `make demo` runs (namespaces, python3, gnuplot)
#   all     build, demo, and what the suites, `make deb` and `make man` run (`make deps`)
#   cross-arm64  the arm64 cross build on amd64 (ARCH=arm64 only, never part of all): the
#           cross compiler and the :arm64 -dev packages of agent and build (dpkg's multiarch;
#           as root, adds the arm64 architecture to dpkg first)
#
# Installs the missing ones (apt-get; root), or, not root, names them and the command to run
# as root, and fails. --check only names them, as any user: plain `make` checks `build` so.
# Idempotent and quick (offline) when everything is present. Not Debian (no dpkg-query):
# --check says nothing and passes, and the compiler names what is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt_missing.sh"

AGENT=(
  make g++ clang llvm pkg-config          # C++20 agent, BPF object (clang -target bpf)
  libbpf-dev bpftool libelf-dev zlib1g-dev linux-libc-dev  # libbpf, skeletons, UAPI headers
  libzmq3-dev cppzmq-dev                  # peer reports (ZeroMQ pub-sub)
  libsodium-dev                           # signed peer reports (Ed25519)
  libcpp-httplib-dev                      # --metrics HTTP server (Prometheus)
  libcap-dev                              # the agent drops its capabilities after setup (libcap)
  libtoml11-dev                           # the rules file (TOML)
  nlohmann-json3-dev                      # `agent stats --json`, the status files (JSON)
  libhiredis-dev                          # strict tag limits (Redis)
  libnftables-dev                         # the SYNPROXY table the agent sets up for SYN cookies
  libxdp-dev                              # --attach xdp-multi: libxdp's dispatcher
)
TESTS_BUILD=(
  libgtest-dev                            # unit and BPF tests
  libclang-rt-14-dev                      # libFuzzer, ASan, UBSan for the decoder fuzzer
)
LAB=(
  iproute2 procps                         # network namespaces, veth, ps/pkill
  python3                                 # the demo's busy signals, the Python client's tests
  jq                                      # tests/netns/lib/json.sh reads the agents' JSON (suites, demo)
  gnuplot-nox                             # the demo's chart (build/demo.png)
)
SUITES=(
  systemd libcap2-bin                     # systemd-analyze verify of the units; capsh (tests/netns/test_privileges.sh)
  redis-server                            # strict tag limits: their tests and bench
  nftables                                # partitions and report loss in tests/netns
  tcpdump                                 # reads agent capture's files (tests/netns/test_capture.sh)
  ethtool                                 # the veths' XDP_TX counters (tests/netns/test_syncookies.sh)
  xdp-tools                               # xdp-filter beside dthrottle in libxdp's dispatcher (test_xdp_multi.sh)
  python3-zmq                             # the hostile peer of tests/netns/test_cluster_security.sh
  pandoc man-db                           # the man pages (make man) and their test
  prometheus                              # promtool and a real Prometheus (contrib/prometheus tests)
  debhelper dpkg-dev fakeroot lintian     # make deb
)
# The libraries the programs link and the headers they include, for another architecture.
# Architecture: all header packages (toml11, nlohmann-json) are shared; cppzmq-dev is per arch.
CROSS_LIBS=(
  libbpf-dev libelf-dev zlib1g-dev linux-libc-dev libzmq3-dev libsodium-dev libcpp-httplib-dev
  libcap-dev libhiredis-dev libnftables-dev libxdp-dev libgtest-dev cppzmq-dev
)
cross_packages() {  # ARCH: the cross compiler and ARCH's -dev packages
  case $1 in
    arm64) echo g++-aarch64-linux-gnu ;;
    *) echo "deps: no cross build for $1 (arm64)" >&2; exit 2 ;;
  esac
  printf "%s:$1\n" "${CROSS_LIBS[@]}"
}
# Multiarch: dpkg must know ARCH before apt can name or install its packages.
add_architecture() {  # ARCH
  dpkg --print-foreign-architectures 2>/dev/null | grep -qx "$1" && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: dpkg does not know the $1 architecture: run 'make deps ARCH=$1' as root" >&2
    echo "deps: (or: sudo dpkg --add-architecture $1 && sudo apt-get update)" >&2
    exit 1
  fi
  echo "deps: dpkg --add-architecture $1"
  dpkg --add-architecture "$1"
  apt-get update -q
}

check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
[ $# -gt 0 ] || set -- all
packages=()
for group in "$@"; do
  case $group in
    agent) packages+=("${AGENT[@]}") ;;
    build) packages+=("${AGENT[@]}" "${TESTS_BUILD[@]}") ;;
    demo) packages+=("${AGENT[@]}" "${LAB[@]}") ;;
    all) packages+=("${AGENT[@]}" "${TESTS_BUILD[@]}" "${LAB[@]}" "${SUITES[@]}") ;;
    cross-*)
      [ "$check" -eq 1 ] || add_architecture "${group#cross-}"
      mapfile -t -O "${#packages[@]}" packages < <(cross_packages "${group#cross-}") ;;
    *) echo "deps: no group '$group' (agent, build, demo, all, cross-arm64)" >&2; exit 2 ;;
  esac
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')

if [ "$check" -eq 1 ]; then
  command -v dpkg-query >/dev/null || exit 0
  apt_name_missing make 'make deps' "${packages[@]}"
else
  apt_install_missing deps 'make deps' "${packages[@]}"
fi
