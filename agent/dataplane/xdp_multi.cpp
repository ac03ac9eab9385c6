// xdp_multi.cpp - joining, taking over and leaving libxdp's dispatcher.
#include "dataplane/xdp_multi.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace dt {
namespace {

// What libxdp said during the last call (its warnings and notices, not its debug lines):
// the reason of a refusal, in its own words. libxdp's printer is process-wide; the agent
// attaches from one thread.
std::string g_libxdp_said;

int capture_libxdp(enum libxdp_print_level level, const char *fmt, va_list args) {
  if (level == LIBXDP_DEBUG) return 0;
  char line[512];
  vsnprintf(line, sizeof line, fmt, args);
  std::string s(line);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto &c : s)
    if (c == '\n') c = ' ';
  if (!s.empty()) g_libxdp_said += (g_libxdp_said.empty() ? "" : "; ") + s;
  return 0;
}

struct LibxdpCapture {
  libxdp_print_fn_t old;
  LibxdpCapture() : old(libxdp_set_print(capture_libxdp)) { g_libxdp_said.clear(); }
  ~LibxdpCapture() { libxdp_set_print(old); }
};

std::string libxdp_reason(int err) {
  char buf[160] = {};
  libxdp_strerror(err, buf, sizeof buf);
  std::string s = buf;
  if (!g_libxdp_said.empty()) s += " (libxdp: " + g_libxdp_said + ")";
  return s;
}

// The id of the program on the hook when it is not libxdp's dispatcher (0 if it is, or none).
uint32_t lone_program(int ifindex) {
  xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (libxdp_get_error(mp) || !mp) return 0;
  uint32_t id = 0;
  if (xdp_multiprog__is_legacy(mp)) id = xdp_program__id(xdp_multiprog__main_prog(mp));
  xdp_multiprog__close(mp);
  return id;
}

std::string taken_error(const std::string &iface, uint32_t id) {
  return "interface " + iface + " already has an XDP program attached (program id " + std::to_string(id) +
         ") that is not libxdp's dispatcher; --attach xdp-multi can only join a dispatcher: load that program "
         "with xdp-loader (or any libxdp user) so both share the hook, or use --attach tc";
}

}  // namespace

std::string xdp_multi_refusal() {
  // The smallest extension program: no target, so a kernel that has the type answers
  // EINVAL (a target is needed); one that refuses the type answers otherwise (EPERM here).
  const bpf_insn insns[] = {{BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS}, {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
  errno = 0;
  const int fd = bpf_prog_load(BPF_PROG_TYPE_EXT, nullptr, "GPL", insns, 2, nullptr);
  const int e = errno;
  if (fd >= 0) close(fd);
  if (fd >= 0 || e == EINVAL) return "";
  return std::string("this kernel refuses extension (freplace, BPF_PROG_TYPE_EXT) programs (") + strerror(e) +
         "), which libxdp's dispatcher needs for every program it runs; libxdp reports it as \"Compatibility "
         "check for dispatcher program failed\" and would attach dthrottle alone instead, taking the hook. "
         "Use --attach xdp (the hook alone) or --attach tc";
}

std::vector<uint32_t> xdp_multi_ours(int ifindex) {
  std::vector<uint32_t> ids;
  xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (libxdp_get_error(mp) || !mp) return ids;
  if (!xdp_multiprog__is_legacy(mp))
    for (xdp_program *p = xdp_multiprog__next_prog(nullptr, mp); p; p = xdp_multiprog__next_prog(p, mp))
      if (strcmp(xdp_program__name(p), kXdpProgName) == 0) ids.push_back(xdp_program__id(p));
  xdp_multiprog__close(mp);
  return ids;
}

bool xdp_multi_attach(bpf_object *obj, int ifindex, const std::string &iface, bool frags, xdp_program **out,
                      std::vector<uint32_t> *previous, std::string *err) {
  LibxdpCapture capture;
  if (const uint32_t id = lone_program(ifindex); id != 0) return *err = taken_error(iface, id), false;
  const std::vector<uint32_t> before = xdp_multi_ours(ifindex);
  DECLARE_LIBXDP_OPTS(xdp_program_opts, po, .obj = obj, .prog_name = kXdpProgName);
  xdp_program *prog = xdp_program__create(&po);
  if (int e = libxdp_get_error(prog); e || !prog)
    return *err = "libxdp cannot use dt_xdp: " + libxdp_reason(e ? e : -EINVAL), false;
  xdp_program__set_run_prio(prog, kXdpMultiPriority);
  if (frags) xdp_program__set_xdp_frags_support(prog, true);
  for (int action = XDP_ABORTED; action <= XDP_REDIRECT; action++)
    xdp_program__set_chain_call_enabled(prog, action, action == XDP_PASS);
  if (int e = xdp_program__attach(prog, ifindex, XDP_MODE_NATIVE, 0); e != 0) {
    *err = "cannot join libxdp's dispatcher on " + iface + ": " + libxdp_reason(e);
    xdp_program__close(prog);
    return false;
  }
  // libxdp attaches a lone program without a dispatcher when the kernel fails its check:
  // that takes the hook from whoever comes next, so it is undone and refused.
  if (lone_program(ifindex) == xdp_program__id(prog)) {
    const std::string said = g_libxdp_said;
    xdp_program__detach(prog, ifindex, XDP_MODE_NATIVE, 0);
    xdp_program__close(prog);
    *err = "libxdp could not run its dispatcher on " + iface + " and attached dthrottle alone; undone. " +
           (said.empty() ? std::string("") : "libxdp: " + said);
    return false;
  }
  *previous = before;
  *out = prog;
  return true;
}

void xdp_multi_retire(int ifindex, const std::string &iface, const std::vector<uint32_t> &previous) {
  if (const int n = xdp_multi_detach_ids(ifindex, previous); n > 0)
    DT_INFO("took over %s in libxdp's dispatcher: %d previous dt_xdp program(s) detached", iface.c_str(), n);
}

int xdp_multi_detach_ids(int ifindex, const std::vector<uint32_t> &ids) {
  LibxdpCapture capture;
  int n = 0;
  for (uint32_t id : ids) {
    xdp_program *p = xdp_program__from_id(id);
    if (libxdp_get_error(p) || !p) continue;
    if (int e = xdp_program__detach(p, ifindex, XDP_MODE_NATIVE, 0); e == 0) n++;
    else DT_WARN("cannot detach dt_xdp (program id %u) from libxdp's dispatcher: %s", id, libxdp_reason(e).c_str());
    xdp_program__close(p);
  }
  return n;
}

void xdp_multi_detach(xdp_program *prog, int ifindex) {
  if (!prog) return;
  LibxdpCapture capture;
  if (int e = xdp_program__detach(prog, ifindex, XDP_MODE_NATIVE, 0); e != 0)
    DT_WARN("cannot detach dt_xdp from libxdp's dispatcher: %s", libxdp_reason(e).c_str());
  xdp_program__close(prog);
}

void xdp_multi_close(xdp_program *prog) {
  if (prog) xdp_program__close(prog);
}

}  // namespace dt
