// kernel_probe.cpp - probe the kernel for what dthrottle.bpf.o needs; word the refusal.
#include "dataplane/kernel_probe.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <vector>

namespace dt {

KernelProbe probe_kernel() {
  KernelProbe p;
  p.syscall_prog = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SYSCALL, nullptr);
  // Without the program type the helper cannot be asked about: it is missing with it.
  p.bpf_loop = p.syscall_prog == 0 ? 0 : libbpf_probe_bpf_helper(BPF_PROG_TYPE_SYSCALL, BPF_FUNC_loop, nullptr);
  p.ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr);
  return p;
}

std::string kernel_version(const std::string &release) {
  // Up to three dot-separated numbers, at least two: "major.minor[.patch]".
  size_t pos = 0;
  int parts = 0;
  std::string out;
  while (parts < 3) {
    size_t digits = pos;
    while (digits < release.size() && std::isdigit(static_cast<unsigned char>(release[digits]))) digits++;
    if (digits == pos) break;
    out += (parts ? "." : "") + release.substr(pos, digits - pos);
    parts++;
    if (digits >= release.size() || release[digits] != '.') break;
    pos = digits + 1;
  }
  return parts >= 2 ? out : "";
}

std::string kernel_floor_error(const std::string &release, const KernelProbe &probe) {
  std::vector<std::string> missing;
  if (probe.bpf_loop == 0) missing.push_back("bpf_loop");
  if (probe.syscall_prog == 0) missing.push_back("BPF_PROG_TYPE_SYSCALL");
  if (probe.ringbuf == 0) missing.push_back("the BPF ring buffer");
  if (missing.empty()) return "";
  std::string what;
  for (const std::string &m : missing) what += (what.empty() ? "" : ", ") + m;
  const std::string version = kernel_version(release);
  return std::string("dthrottle needs Linux ") + kKernelFloor + " or later (" + what + "); this is " +
         (version.empty() ? "'" + release + "'" : version);
}

std::string check_kernel_floor() {
  utsname u{};
  uname(&u);
  return kernel_floor_error(u.release, probe_kernel());
}

int probe_syncookie_helpers() {
  // Probed once, at the first load (as root): a reload after the privileges are dropped
  // gets the same answer.
  static const int answer = libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, BPF_FUNC_tcp_raw_gen_syncookie_ipv4, nullptr);
  return answer;
}

int probe_xdp_frags() {
  static const int answer = [] {
    const bpf_insn insns[] = {{BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
                              {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
    LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_XDP, .prog_flags = BPF_F_XDP_HAS_FRAGS);
    const int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, nullptr, "GPL", insns, 2, &o);
    if (fd >= 0) close(fd);
    // EINVAL: the flag is unknown (before 5.18); anything else says nothing of the flag.
    return fd >= 0 ? 1 : errno == EINVAL ? 0 : -errno;
  }();
  return answer;
}

std::string xdp_mtu_warning(const std::string &iface, unsigned mtu, int frags) {
  if (frags != 0 || mtu <= kPlainXdpMaxMtu) return "";
  return "the MTU of " + iface + " is " + std::to_string(mtu) + ", above the " + std::to_string(kPlainXdpMaxMtu) +
         " a plain XDP program takes on most drivers, and this kernel has no multi-buffer XDP (Linux " +
         kXdpFragsKernel +
         "): the plain program is loaded, and the driver may refuse it or drop larger frames; "
         "lower the MTU, or use --attach tc";
}

std::string syn_cookies_error(const std::vector<std::string> &rules, bool tc, int helpers, const std::string &release) {
  if (rules.empty()) return "";
  std::string names;
  for (const std::string &n : rules) names += (names.empty() ? "'" : ", '") + n + "'";
  if (tc)
    return "syn_cookies (rule " + names +
           ") needs the XDP hook: at --attach tc the program cannot send the "
           "SYN-ACK back out of the port (XDP_TX); attach at XDP, or drop syn_cookies from the rules";
  if (helpers != 0) return "";
  const std::string version = kernel_version(release);
  return "syn_cookies (rule " + names + ") needs Linux " + kSynCookieKernel +
         " or later (bpf_tcp_raw_gen_syncookie_ipv4); this is " + (version.empty() ? "'" + release + "'" : version) +
         ": drop syn_cookies from the rules, or upgrade the kernel";
}

std::string check_syn_cookies(const std::vector<std::string> &rules, bool tc) {
  if (rules.empty()) return "";
  utsname u{};
  uname(&u);
  return syn_cookies_error(rules, tc, tc ? -1 : probe_syncookie_helpers(), u.release);
}

}  // namespace dt
