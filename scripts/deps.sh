#!/usr/bin/env bash
# deps.sh - install every Debian package dthrottle needs to build, test and demo.
# Idempotent and quick when everything is present; needs root to install.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt_missing.sh"

PACKAGES=(
  make g++ clang llvm pkg-config          # C++20 agent, BPF object (clang -target bpf)
  libbpf-dev bpftool libelf-dev zlib1g-dev linux-libc-dev  # libbpf, skeletons, UAPI headers
  libzmq3-dev cppzmq-dev                  # peer reports (ZeroMQ pub-sub)
  libsodium-dev                           # signed peer reports (Ed25519)
  libcpp-httplib-dev                      # --metrics HTTP server (Prometheus)
  libcap-dev                              # the agent drops its capabilities after setup (libcap)
  systemd libcap2-bin                     # systemd-analyze verify of the units; capsh (tests/netns/test_privileges.sh)
  libgtest-dev                            # unit and BPF tests
  libclang-rt-14-dev                      # libFuzzer, ASan, UBSan for the decoder fuzzer
  libtoml11-dev                           # the rules file (TOML)
  nlohmann-json3-dev                      # `agent stats --json`, the status files (JSON)
  libhiredis-dev redis-server             # strict tag limits (Redis), their tests and bench
  iproute2 procps                         # network namespaces, veth, ps/pkill
  nftables                                # partitions and report loss in tests/netns
  tcpdump                                 # reads agent capture's files (tests/netns/test_capture.sh)
  python3                                 # the Python client's tests (tests/clients)
  python3-zmq                             # the hostile peer of tests/netns/test_cluster_security.sh
  gnuplot-nox                             # the demo's chart (build/demo.png)
  pandoc man-db                           # the man pages (make man) and their test
  prometheus                              # promtool and a real Prometheus (contrib/prometheus tests)
  debhelper dpkg-dev fakeroot lintian     # make deb
)

apt_install_missing deps 'make deps' "${PACKAGES[@]}"
