// privileges.cpp - capabilities kept after setup, dropped in every thread (privileges.h).
#include "daemon/privileges.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

namespace dt {
namespace {

uint64_t mask_of(const std::vector<KeptCapability> &caps) {
  uint64_t m = 0;
  for (const auto &c : caps) m |= 1ull << c.cap;
  return m;
}

// --- the other threads: a signal whose handler applies the drop to its own thread ----------
// Capabilities, the bounding set and no_new_privs belong to each thread; libcap changes the
// caller's only (libpsx would reach only threads created through its wrapper, not those of
// libstdc++ or libzmq). The handler may only make system calls: its data is set up before.
struct ThreadDrop {
  __user_cap_header_struct header{};
  __user_cap_data_struct data[2]{};
  uint64_t drop_bounding = 0;
  int last_cap = 0;
  std::atomic<int> done{0}, failed{0};
};
ThreadDrop g_drop;

extern "C" void drop_in_signalled_thread(int) {
  const int saved_errno = errno;
  bool ok = true;
  for (int cap = 0; cap <= g_drop.last_cap; cap++)
    if ((g_drop.drop_bounding >> cap) & 1) ok = (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL) && ok;
  __user_cap_header_struct header = g_drop.header;  // the kernel may write into it
  ok = syscall(SYS_capset, &header, g_drop.data) == 0 && ok;
  ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && ok;
  if (!ok) g_drop.failed++;
  g_drop.done++;
  errno = saved_errno;
}

std::vector<pid_t> other_threads() {
  std::vector<pid_t> tids;
  const pid_t me = static_cast<pid_t>(syscall(SYS_gettid));
  DIR *d = opendir("/proc/self/task");
  if (!d) return tids;
  while (dirent *e = readdir(d)) {
    const pid_t tid = static_cast<pid_t>(atoi(e->d_name));
    if (tid > 0 && tid != me) tids.push_back(tid);
  }
  closedir(d);
  return tids;
}

// Signals every other thread and waits (up to 2 s) for their handlers. The handler stays
// installed: a thread that blocks the signal would otherwise die of it when it unblocks.
// A thread that never ran it is found by the check that follows.
void drop_in_other_threads(const std::vector<KeptCapability> &keep, bool can_drop_bounding) {
  const uint32_t kept = static_cast<uint32_t>(mask_of(keep)), kept_hi = static_cast<uint32_t>(mask_of(keep) >> 32);
  g_drop.header = {_LINUX_CAPABILITY_VERSION_3, 0};
  g_drop.data[0] = {kept, kept, 0};
  g_drop.data[1] = {kept_hi, kept_hi, 0};
  g_drop.last_cap = static_cast<int>(cap_max_bits()) - 1;
  g_drop.drop_bounding = can_drop_bounding ? ~mask_of(keep) : 0;
  struct sigaction sa {};
  sa.sa_handler = drop_in_signalled_thread;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGRTMIN, &sa, nullptr);
  const std::vector<pid_t> tids = other_threads();
  const int before = g_drop.done.load();
  int sent = 0;
  for (pid_t tid : tids)
    if (syscall(SYS_tgkill, getpid(), tid, SIGRTMIN) == 0) sent++;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (g_drop.done.load() - before < sent && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// --- this thread, through libcap ------------------------------------------------------------
bool drop_in_this_thread(const std::vector<KeptCapability> &keep, bool can_drop_bounding, std::string *err) {
  const uint64_t kept = mask_of(keep);
  if (can_drop_bounding)
    for (cap_value_t cap = 0; cap < static_cast<cap_value_t>(cap_max_bits()); cap++)
      if (!((kept >> cap) & 1) && CAP_IS_SUPPORTED(cap) && cap_drop_bound(cap) != 0)
        return *err = "cannot drop capability " + std::to_string(cap) + " from the bounding set: " + strerror(errno),
               false;
  cap_t caps = cap_init();  // all clear, the inheritable set too
  std::vector<cap_value_t> values;
  for (const auto &c : keep) values.push_back(c.cap);
  bool ok = caps && (values.empty() ||
                     (cap_set_flag(caps, CAP_EFFECTIVE, static_cast<int>(values.size()), values.data(), CAP_SET) == 0 &&
                      cap_set_flag(caps, CAP_PERMITTED, static_cast<int>(values.size()), values.data(), CAP_SET) == 0));
  ok = ok && cap_set_proc(caps) == 0;
  const int saved = errno;
  if (caps) cap_free(caps);
  if (!ok) return *err = std::string("cannot set the capabilities: ") + strerror(saved), false;
  cap_reset_ambient();  // empty anyway once the inheritable set is: said, not relied on
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return *err = std::string("cannot set no_new_privs: ") + strerror(errno), false;
  return true;
}

// --- the check: every thread's sets as the kernel shows them ----------------------------------
struct ThreadCaps {
  uint64_t eff = 0, prm = 0, bnd = 0;
  bool nnp = false;
  std::string name;
};

bool read_thread_caps(const std::string &dir, ThreadCaps *out) {
  std::ifstream in(dir + "/status");
  std::string line;
  int seen = 0;
  while (std::getline(in, line)) {
    auto value = [&line](const char *key, uint64_t *v) {
      if (line.rfind(key, 0) != 0) return false;
      *v = std::stoull(line.substr(strlen(key)), nullptr, 16);
      return true;
    };
    uint64_t nnp = 0;
    if (value("CapEff:", &out->eff) || value("CapPrm:", &out->prm) || value("CapBnd:", &out->bnd)) seen++;
    if (value("NoNewPrivs:", &nnp)) out->nnp = nnp != 0, seen++;
    if (line.rfind("Name:", 0) == 0) out->name = line.substr(line.find_first_not_of(" \t", 5));
  }
  return seen == 4;
}

// "" if every thread holds at most `kept` (and `bounding` in its bounding set), with no_new_privs.
std::string threads_holding_more(uint64_t kept, uint64_t bounding) {
  std::string found;
  DIR *d = opendir("/proc/self/task");
  if (!d) return std::string("cannot list /proc/self/task: ") + strerror(errno);
  while (dirent *e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ThreadCaps t;
    if (!read_thread_caps(std::string("/proc/self/task/") + e->d_name, &t)) continue;  // gone
    if ((t.eff | t.prm) & ~kept || t.bnd & ~bounding || !t.nnp)
      found += (found.empty() ? "" : "; ") + std::string("thread ") + e->d_name + " (" + t.name + ") still has " +
               (capability_names((t.eff | t.prm) & ~kept) + (t.nnp ? "" : " and no no_new_privs"));
  }
  closedir(d);
  return found;
}

}  // namespace

std::vector<KeptCapability> capabilities_to_keep(const PrivilegeNeeds &needs) {
  std::vector<KeptCapability> keep;
  if (needs.dispatcher_detach)
    keep.push_back({CAP_NET_ADMIN, "CAP_NET_ADMIN",
                    "leaves libxdp's dispatcher at exit (attaches the dispatcher rebuilt without dthrottle)"});
  else if (needs.clsact_detach && needs.synproxy)
    keep.push_back({CAP_NET_ADMIN, "CAP_NET_ADMIN",
                    "removes the clsact filter (and the qdisc dthrottle created) and the SYNPROXY table at exit"});
  else if (needs.clsact_detach)
    keep.push_back(
        {CAP_NET_ADMIN, "CAP_NET_ADMIN", "removes the clsact filter (and the qdisc dthrottle created) at exit"});
  else if (needs.synproxy)
    keep.push_back({CAP_NET_ADMIN, "CAP_NET_ADMIN",
                    "replaces (reload) and removes (exit) the SYNPROXY table of the syn_cookies rules"});
  if (needs.dispatcher_detach)
    keep.push_back({CAP_SYS_ADMIN, "CAP_SYS_ADMIN",
                    "leaves libxdp's dispatcher at exit (libxdp opens the dispatcher and its programs by id)"});
  if (needs.new_maps)
    keep.push_back({CAP_BPF, "CAP_BPF", "a reload builds the allow and deny lists' new tries (map creation needs it)"});
  else if (needs.bpf_gated)
    keep.push_back(
        {CAP_BPF, "CAP_BPF",
         "this kernel (before 5.19, kernel.unprivileged_bpf_disabled set) refuses every bpf() command without it"});
  return keep;
}

bool bpf_commands_need_cap_bpf(int map_fd) {
  bool refused = false;
  std::thread probe([&] {
    cap_t caps = cap_get_proc();
    const cap_value_t drop[] = {CAP_BPF, CAP_SYS_ADMIN};
    if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 2, drop, CAP_CLEAR) != 0 || cap_set_proc(caps) != 0) {
      if (caps) cap_free(caps);
      return;  // cannot tell: assumed not (the drop's check tells if it was wrong)
    }
    cap_free(caps);
    bpf_map_info info{};
    uint32_t len = sizeof info;
    refused = bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0 && errno == EPERM;
  });
  probe.join();
  return refused;
}

bool drop_privileges(const std::vector<KeptCapability> &keep, std::string *warning, std::string *err) {
  cap_t now = cap_get_proc();
  cap_flag_value_t setpcap = CAP_CLEAR;
  if (now) cap_get_flag(now, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap), cap_free(now);
  const bool can_drop_bounding = setpcap == CAP_SET;
  ThreadCaps me;
  const bool bounding_has_more = !read_thread_caps("/proc/thread-self", &me) || (me.bnd & ~mask_of(keep)) != 0;
  if (!can_drop_bounding && bounding_has_more)
    *warning =
        "no CAP_SETPCAP: the capability bounding set stays as it was (the effective and permitted sets are "
        "dropped, and no_new_privs keeps execve from regaining any); give the agent CAP_SETPCAP to drop it";
  drop_in_other_threads(keep, can_drop_bounding);
  if (!drop_in_this_thread(keep, can_drop_bounding, err)) return false;
  // Without CAP_SETPCAP the bounding set is the one the agent was started with (read before).
  const uint64_t bounding = can_drop_bounding ? mask_of(keep) : me.bnd;
  if (std::string more = threads_holding_more(mask_of(keep), bounding); !more.empty())
    return *err = "dropping the capabilities failed: " + more, false;
  return true;
}

std::string refused_after_drop(int negative_errno) {
  if (negative_errno != -EPERM) return "";
  return " (the agent dropped its capabilities once attached, docs/security.md \"Privileges\"; this kernel wants one "
         "for it: restart the agent to apply the change, and report it)";
}

std::string describe_capabilities(const std::vector<KeptCapability> &caps) {
  std::string out;
  for (const auto &c : caps) out += (out.empty() ? "" : ", ") + std::string(c.name) + " (" + c.why + ")";
  return out.empty() ? "none" : out;
}

std::string capability_names(uint64_t mask) {
  std::string out;
  for (int cap = 0; cap < 64; cap++) {
    if (!((mask >> cap) & 1)) continue;
    char *name = cap_to_name(cap);
    std::string n = name ? name : "cap_" + std::to_string(cap);
    if (name) cap_free(name);
    for (char &ch : n) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
    out += (out.empty() ? "" : ",") + n;
  }
  return out;
}

}  // namespace dt
