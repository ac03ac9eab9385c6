// kernel_probe.h - the kernel floor: what the BPF object needs, probed at start, and the message when it is missing.
//
// dthrottle needs Linux 5.17 or later: the agent's debit and collect programs
// (BPF_PROG_TYPE_SYSCALL, 5.14) walk their batches with bpf_loop (5.17), and the packet
// path announces active sources through a BPF ring buffer (5.8). The probe asks the
// kernel itself (libbpf_probe_*), not its version number, so a distribution kernel with
// these backported (RHEL 9's 5.14) passes; the version only goes into the message.
// --attach tc needs nothing more: tcx links (6.6) are used where they exist.
#pragma once

#include <string>
#include <vector>

namespace dt {

// The oldest mainline kernel with everything the object needs.
constexpr const char *kKernelFloor = "5.17";

// What the running kernel supports, as the probes answered: 1 yes, 0 no, < 0 the probe
// itself failed (unknown: not held against the kernel).
struct KernelProbe {
  int syscall_prog = -1;  // BPF_PROG_TYPE_SYSCALL programs
  int bpf_loop = -1;      // the bpf_loop helper in them
  int ringbuf = -1;       // BPF_MAP_TYPE_RINGBUF
};

// Probes the running kernel (needs the privileges of a BPF load).
KernelProbe probe_kernel();

// "5.15.0" from a uname release such as "5.15.0-91-generic" ("" if it does not start
// with a version number).
std::string kernel_version(const std::string &release);

// The refusal for a kernel that lacks something the object needs, e.g. "dthrottle needs
// Linux 5.17 or later (bpf_loop); this is 5.15.0"; "" if nothing is known to be missing.
std::string kernel_floor_error(const std::string &release, const KernelProbe &probe);

// The same for the running kernel (uname and probe_kernel).
std::string check_kernel_floor();

// SYN cookies (syn_cookies rules, bpf/syncookie.bpf.h) need bpf_tcp_raw_gen_syncookie_ipv4
// and its kin (Linux 6.0) and the XDP hook (tc has no XDP_TX). Below 6.0 the object still
// loads (the agent tells it the helpers are missing: dt_syncookie_helpers).
constexpr const char *kSynCookieKernel = "6.0";

// 1 if the kernel has the SYN cookie helpers for XDP programs, 0 if not, < 0 unknown
// (probed once per process; the first call needs the privileges of a BPF load).
int probe_syncookie_helpers();

// The refusal of the rules `rules` (names of the rules with syn_cookies; nothing to
// refuse when empty) at the hook `tc` (--attach tc) on a kernel whose probe answered
// `helpers` (release: uname's, for the message); "" when they can run.
std::string syn_cookies_error(const std::vector<std::string> &rules, bool tc, int helpers, const std::string &release);

// The same for the running kernel (uname and probe_syncookie_helpers, probed only when
// a rule asks for cookies).
std::string check_syn_cookies(const std::vector<std::string> &rules, bool tc);

// Multi-buffer XDP (BPF_F_XDP_HAS_FRAGS, bpf_xdp_get_buff_len: Linux 5.18): 1 if an XDP
// program may take frames larger than a page (jumbo MTU), 0 if not, < 0 unknown (probed
// once per process, as probe_syncookie_helpers).
constexpr const char *kXdpFragsKernel = "5.18";
int probe_xdp_frags();

// The largest MTU a plain (single-buffer) XDP program takes on common drivers: a 4 KiB
// page less the headroom, the Ethernet header and the skb_shared_info the frame needs.
constexpr unsigned kPlainXdpMaxMtu = 3498;

// The warning for an interface whose MTU plain XDP may not take, on a kernel without
// multi-buffer XDP (frags: probe_xdp_frags()); "" when there is nothing to say.
std::string xdp_mtu_warning(const std::string &iface, unsigned mtu, int frags);

}  // namespace dt
