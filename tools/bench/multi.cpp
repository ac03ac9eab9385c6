// multi.cpp - Part 1i (`bench multi`): dt_xdp run alone and the same dt_xdp inside libxdp's
// dispatcher (--attach xdp-multi), side by side, on one source.
//
// libxdp builds a dispatcher only for an interface: the part makes a network namespace of its
// own with two veth pairs in it, joins the dispatcher of two veths the way the agent does
// (xdp_multi_attach: run priority 50, XDP_PASS the only chain-call action), and test-runs the
// dispatcher, which calls dt_xdp through its slot. dt_xdp alone is attached (plain XDP, as
// --attach xdp) to the other two: both sides are programs the kernel's XDP path holds, as on
// a host. The namespace, its veths and libxdp's pins go when the part ends. A kernel that
// refuses the dispatcher gets one line saying why.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "bench/programs.h"
#include "dataplane/xdp_multi.h"
#include "dthrottle.skel.h"

namespace dt::bench {
namespace {

constexpr const char *kVeth[4] = {"dtbench0", "dtbench1", "dtbench2", "dtbench3"};

// Runs `ip link add A type veth peer name B` in this thread's namespace.
bool add_veth_pair(const char *a, const char *b, std::string *err) {
  const pid_t pid = fork();
  if (pid < 0) return *err = std::string("fork: ") + strerror(errno), false;
  if (pid == 0) {
    execlp("ip", "ip", "link", "add", a, "type", "veth", "peer", "name", b, nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  return *err = "`ip link add " + std::string(a) + " type veth` failed (is iproute2 installed?)", false;
}

// The bench's own network namespace, entered on construction and left (so removed, with its
// veths) on destruction.
class PrivateNetns {
 public:
  explicit PrivateNetns(std::string *err) : home_(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) {
    if (home_ < 0 || unshare(CLONE_NEWNET) != 0)
      *err = std::string("cannot make a network namespace: ") + strerror(errno);
    else entered_ = add_veth_pair(kVeth[0], kVeth[1], err) && add_veth_pair(kVeth[2], kVeth[3], err);
  }
  ~PrivateNetns() {
    if (home_ >= 0 && setns(home_, CLONE_NEWNET) != 0) die("cannot go back to the bench's network namespace");
    if (home_ >= 0) close(home_);
  }
  bool ok() const { return entered_; }

 private:
  int home_;
  bool entered_ = false;
};

// A program attached alone (native XDP, as --attach xdp) to `iface` while this lives.
class Alone {
 public:
  Alone(int fd, const char *iface, std::string *err) : ifindex_(static_cast<int>(if_nametoindex(iface))) {
    attached = bpf_xdp_attach(ifindex_, fd, XDP_FLAGS_DRV_MODE, nullptr) == 0;
    if (!attached) *err = std::string("cannot attach dt_xdp to ") + iface + ": " + strerror(errno);
  }
  ~Alone() {
    if (attached) bpf_xdp_detach(ifindex_, XDP_FLAGS_DRV_MODE, nullptr);
  }
  bool attached = false;

 private:
  int ifindex_;
};

// dt_xdp of `throttle` in the dispatcher of `iface`, as --attach xdp-multi puts it there.
class InDispatcher {
 public:
  InDispatcher(const Throttle &throttle, const char *iface, std::string *err)
      : sibling_(throttle.open_xdp_sibling()), ifindex_(static_cast<int>(if_nametoindex(iface))) {
    std::vector<uint32_t> previous;  // none: the bench's own namespace
    if (!dt::xdp_multi_attach(sibling_->obj, ifindex_, iface, false, &prog_, &previous, err)) return;
    mp_ = xdp_multiprog__get_from_ifindex(ifindex_);
    if (libxdp_get_error(mp_) || !mp_ || xdp_multiprog__is_legacy(mp_))
      *err = std::string("libxdp attached dt_xdp to ") + iface + " but shows no dispatcher there";
    else fd = xdp_program__fd(xdp_multiprog__main_prog(mp_));
  }
  ~InDispatcher() {
    if (mp_ && !libxdp_get_error(mp_)) xdp_multiprog__close(mp_);
    dt::xdp_multi_detach(prog_, ifindex_);
  }
  int fd = -1;  // the dispatcher's
  int ext_fd() const { return prog_ ? xdp_program__fd(prog_) : -1; }

 private:
  std::unique_ptr<dthrottle_bpf, SkeletonDestroyer> sibling_;
  int ifindex_;
  xdp_program *prog_ = nullptr;
  xdp_multiprog *mp_ = nullptr;
};

// "id N, JITed M bytes" (or "NOT JITed") of a program.
std::string jit_of(int fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return "no info: " + std::string(strerror(errno));
  return std::string(info.name) + " id " + std::to_string(info.id) +
         (info.jited_prog_len ? " JITed " + std::to_string(info.jited_prog_len) + " B" : " NOT JITed");
}

struct Row {
  const char *name;
  int alone, inside;  // fds: dt_xdp itself, the dispatcher holding its sibling
  uint32_t want;
  std::vector<double> ns_alone, ns_inside, diff;
};

void measure(Row *rows, int n, const std::vector<uint8_t> &frame) {
  constexpr uint32_t kRepeat = 2'000'000;
  uint32_t retval = 0;
  for (int i = 0; i < n; i++) run_direct(rows[i].alone, frame, 1000, &retval);  // buckets made, drop's emptied
  for (int round = 0; round < kRounds; round++)
    for (int i = 0; i < n; i++) {
      Row &r = rows[round % 2 ? n - 1 - i : i];
      const bool inside_first = (round / 2) % 2;  // each order in turn
      double ns[2];
      for (int k = 0; k < 2; k++) {
        const bool inside = (k == 0) == inside_first;
        ns[inside] = run_direct(inside ? r.inside : r.alone, frame, kRepeat, &retval);
        if (retval != r.want)
          die("%s %s: the last frame returned %u, expected %u", r.name, inside ? "in the dispatcher" : "alone", retval,
              r.want);
      }
      r.ns_alone.push_back(ns[0]);
      r.ns_inside.push_back(ns[1]);
      r.diff.push_back(ns[1] - ns[0]);
    }
}

}  // namespace

void multi_part() {
  printf(
      "\nPart 1i: libxdp's dispatcher (--attach xdp-multi), one IPv4 source (BPF_PROG_TEST_RUN, ns per frame, "
      "median of %d)\n",
      kRounds);
  if (std::string why = dt::xdp_multi_refusal(); !why.empty()) {
    printf("  not measured: %s\n", why.substr(0, why.find(". Use ")).c_str());
    return;
  }
  std::string err, err2, err3;
  PrivateNetns netns(&err);
  if (!netns.ok()) return (void)printf("  not measured: %s\n", err.c_str());
  Throttle pass(kBucketCapacity, policy_or_die(1e6, DT_BURST_MAX));
  Throttle drop(kBucketCapacity, policy_or_die(DT_RATE_MIN, 1));
  InDispatcher pass_in(pass, kVeth[0], &err);
  InDispatcher drop_in(drop, kVeth[1], &err2);
  Alone pass_alone(pass.fd.xdp, kVeth[2], &err3), drop_alone(drop.fd.xdp, kVeth[3], &err3);
  if (pass_in.fd < 0 || drop_in.fd < 0 || !pass_alone.attached || !drop_alone.attached)
    return (void)printf("  not measured: %s\n", (!err.empty() ? err : !err2.empty() ? err2 : err3).c_str());
  Row rows[] = {{"PASS", pass.fd.xdp, pass_in.fd, XDP_PASS, {}, {}, {}},
                {"DROP", drop.fd.xdp, drop_in.fd, XDP_DROP, {}, {}, {}}};
  measure(rows, 2, make_frame(false));
  for (const Row &r : rows) {
    const double alone = median(r.ns_alone), d = median(r.diff);
    printf("  %s  alone %6.1f   in the dispatcher %6.1f   difference %+5.1f ns (%+.1f%%)\n", r.name, alone,
           median(r.ns_inside), d, 100 * d / alone);
  }
  printf("  (difference: the median of each round's in-dispatcher minus alone, run back to back)\n");
  printf("  programs: %s; %s; dt_xdp alone: %s\n", jit_of(pass_in.fd).c_str(), jit_of(pass_in.ext_fd()).c_str(),
         jit_of(pass.fd.xdp).c_str());
}

}  // namespace dt::bench
