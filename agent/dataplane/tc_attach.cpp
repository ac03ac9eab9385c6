// tc_attach.cpp - attach, take over and remove dthrottle at tc ingress (tcx link or clsact filter).
#include "dataplane/tc_attach.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errno_str.h"
#include "common/log.h"

namespace dt {

int prog_named(uint32_t prog_id, const char *name) {
  const int fd = bpf_prog_get_fd_by_id(prog_id);
  if (fd < 0) return -1;
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  const int rc = bpf_obj_get_info_by_fd(fd, &info, &len);
  const int saved = errno;
  close(fd);
  errno = saved;
  return rc != 0 ? -1 : strcmp(info.name, name) == 0;
}

namespace {

// Debian 12's headers (Linux 6.1) predate tcx (6.6): its uapi values, fixed by the kernel ABI.
constexpr int kAttachTcxIngress = 46;      // BPF_TCX_INGRESS
constexpr uint32_t kLinkTypeTcx = 11;      // BPF_LINK_TYPE_TCX
constexpr uint32_t kFlagBefore = 1u << 3;  // BPF_F_BEFORE: with no relative program, first of all

// "pref 1 handle 0xd7", as `tc filter show` prints it.
std::string place() {
  char b[48];
  snprintf(b, sizeof b, "pref %u handle 0x%x", kTcPriority, kTcHandle);
  return b;
}

// What a dump of the ingress filters found at dthrottle's pref.
struct PrefScan {
  int others = 0;     // filters of others at kTcPriority
  bool ours = false;  // a filter at kTcPriority, kTcHandle (whoever's program it holds)
  std::string name;   // that filter's TCA_BPF_NAME: "dt_tc:[ID]" as libbpf names it
};
int count_filters(int sock, int ifindex, uint32_t parent, PrefScan *scan);
int filter_count(int ifindex, bool egress_too, PrefScan *scan = nullptr);

// True if the program `prog_id` in the filter at dthrottle's place of `ifindex` is dthrottle's
// tc program (by its name). Without CAP_SYS_ADMIN (BPF_PROG_GET_FD_BY_ID needs it: the unit
// does not give it) by the name the filter was attached under.
bool prog_is_ours(int ifindex, uint32_t prog_id) {
  if (const int named = prog_named(prog_id, kTcProgName); named >= 0) return named;
  PrefScan scan;
  return errno == EPERM && filter_count(ifindex, false, &scan) > 0 &&
         scan.name == std::string(kTcProgName) + ":[" + std::to_string(prog_id) + "]";
}

// The program id of the clsact ingress filter at dthrottle's place, 0 if there is none.
uint32_t filter_prog_id(int ifindex) {
  // Asked only where the dump saw one: libbpf would log the kernel's complaint about a
  // missing qdisc or filter as an error.
  PrefScan scan;
  if (filter_count(ifindex, false, &scan) <= 0 || !scan.ours) return 0;
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, q, .handle = kTcHandle, .priority = kTcPriority);
  if (bpf_tc_query(&hook, &q) != 0) return 0;
  return q.prog_id;
}

// The tcx link pinned at link_pin if it is one for `ifindex`, else -1 (a stale pin is removed).
int pinned_tcx_link(int ifindex, const std::string &link_pin) {
  const int lfd = bpf_obj_get(link_pin.c_str());
  if (lfd < 0) return -1;
  bpf_link_info info{};
  uint32_t len = sizeof info;
  // A tcx link's info starts with its ifindex, where an XDP link's does.
  if (bpf_obj_get_info_by_fd(lfd, &info, &len) == 0 && info.type == kLinkTypeTcx &&
      static_cast<int>(info.xdp.ifindex) == ifindex)
    return lfd;
  DT_WARN("removing stale pinned link %s (not a tc link of ifindex %d)", link_pin.c_str(), ifindex);
  unlink(link_pin.c_str());
  close(lfd);
  return -1;
}

// Others' filters at dthrottle's pref run in the order they were added: one added before
// dthrottle's that returns a verdict keeps it from seeing the packet. Said, not changed.
void warn_if_shared(int ifindex) {
  PrefScan scan;
  if (filter_count(ifindex, false, &scan) <= 0 || scan.others == 0) return;
  char name[IF_NAMESIZE] = "?";
  if_indextoname(static_cast<unsigned>(ifindex), name);
  DT_WARN(
      "%d other tc filter(s) share dthrottle's %s on the ingress of %s: tc runs them in the order they "
      "were added, and one that returns a verdict first keeps dthrottle from seeing the packet "
      "(see: tc filter show dev %s ingress)",
      scan.others, place().c_str(), name, name);
}

// Swaps prog_fd into dthrottle's clsact filter (atomic: packets see the old program or the new).
int replace_filter(int ifindex, int prog_fd) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, o, .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE, .handle = kTcHandle,
              .priority = kTcPriority);
  return bpf_tc_attach(&hook, &o);
}

// A previous agent's attachment, taken over (prog_fd swapped in); false if there is none. A tcx
// link that refuses the new program is left in *stale, still pinned and enforcing, for the
// caller to remove once a new attachment is in.
bool take_over(int ifindex, int prog_fd, const std::string &link_pin, bool qdisc_was_ours, TcAttachment *out,
               int *stale) {
  if (int lfd = pinned_tcx_link(ifindex, link_pin); lfd >= 0) {
    if (bpf_link_update(lfd, prog_fd, nullptr) == 0) {
      *out = TcAttachment{TcHow::Tcx, lfd, true, false};
      return true;
    }
    DT_WARN("cannot take over the tcx link %s (%s); attaching anew, then removing it", link_pin.c_str(),
            errno_str(errno).c_str());
    *stale = lfd;
  }
  const uint32_t id = filter_prog_id(ifindex);
  if (id == 0 || !prog_is_ours(ifindex, id)) return false;
  if (int rc = replace_filter(ifindex, prog_fd); rc != 0) {
    DT_WARN("cannot replace the program of dthrottle's clsact filter (%s)", errno_str(rc).c_str());
    return false;
  }
  *out = TcAttachment{TcHow::Clsact, -1, true, qdisc_was_ours};
  warn_if_shared(ifindex);
  return true;
}

// bpf_tc_hook_create, without libbpf logging the kernel's "Exclusivity flag on" as an error when
// the qdisc is there already: -EEXIST is an answer here. (At start, before any thread of the
// agent uses libbpf.)
int create_clsact_quietly(bpf_tc_hook *hook) {
  const libbpf_print_fn_t previous = libbpf_set_print(nullptr);
  const int rc = bpf_tc_hook_create(hook);
  libbpf_set_print(previous);
  return rc;
}

// A new clsact filter (and the clsact qdisc if the interface has none).
bool attach_clsact(int ifindex, const std::string &iface, int prog_fd, TcAttachment *out, std::string *err) {
  if (uint32_t id = filter_prog_id(ifindex); id != 0) {
    *err = "interface " + iface + " already has a tc ingress filter at dthrottle's place (" + place() +
           ", program id " + std::to_string(id) +
           ") that is not dthrottle's; dthrottle will not replace it. "
           "See: tc filter show dev " +
           iface + " ingress";
    return false;
  }
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  const int hrc = create_clsact_quietly(&hook);
  if (hrc != 0 && hrc != -EEXIST) {
    *err = "cannot create the clsact qdisc on " + iface + ": " + errno_str(hrc);
    return false;
  }
  if (int rc = replace_filter(ifindex, prog_fd); rc != 0) {
    *err = "cannot attach the tc filter to " + iface + " ingress: " + errno_str(rc);
    if (hrc == 0) {
      LIBBPF_OPTS(bpf_tc_hook, both, .ifindex = ifindex,
                  .attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
      bpf_tc_hook_destroy(&both);
    }
    return false;
  }
  *out = TcAttachment{TcHow::Clsact, -1, false, hrc == 0};
  warn_if_shared(ifindex);
  return true;
}

// The TCA_BPF_NAME of a cls_bpf filter message ("" if it has none).
std::string bpf_filter_name(const nlmsghdr *h) {
  int left = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(tcmsg)));
  for (auto *a =
           reinterpret_cast<const rtattr *>(static_cast<const char *>(NLMSG_DATA(h)) + NLMSG_ALIGN(sizeof(tcmsg)));
       RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type != TCA_OPTIONS) continue;
    int in = static_cast<int>(RTA_PAYLOAD(a));
    for (auto *o = static_cast<const rtattr *>(RTA_DATA(a)); RTA_OK(o, in); o = RTA_NEXT(o, in))
      if (o->rta_type == TCA_BPF_NAME)
        return std::string(static_cast<const char *>(RTA_DATA(o)),
                           strnlen(static_cast<const char *>(RTA_DATA(o)), RTA_PAYLOAD(o)));
  }
  return "";
}

// One dump of the filters under `parent`: their number, or -1; *scan (if given) what is at
// dthrottle's pref.
int count_filters(int sock, int ifindex, uint32_t parent, PrefScan *scan) {
  struct {
    nlmsghdr n;
    tcmsg t;
  } req{};
  req.n.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
  req.n.nlmsg_type = RTM_GETTFILTER;
  req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.n.nlmsg_seq = parent;
  req.t.tcm_family = AF_UNSPEC;
  req.t.tcm_ifindex = ifindex;
  req.t.tcm_parent = parent;
  if (send(sock, &req, req.n.nlmsg_len, 0) < 0) return -1;
  int count = 0;
  alignas(nlmsghdr) char buf[32768];
  for (;;) {
    const ssize_t n = recv(sock, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    int left = static_cast<int>(n);
    for (auto *h = reinterpret_cast<nlmsghdr *>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return count;
      if (h->nlmsg_type == NLMSG_ERROR) return -1;
      if (h->nlmsg_type != RTM_NEWTFILTER) continue;
      count++;
      const auto *t = static_cast<const tcmsg *>(NLMSG_DATA(h));
      // tcm_info: pref << 16 | protocol; handle 0 is the entry of the pref itself.
      if (!scan || (t->tcm_info >> 16) != kTcPriority || t->tcm_handle == 0) continue;
      if (t->tcm_handle == kTcHandle) {
        scan->ours = true;
        scan->name = bpf_filter_name(h);
      } else scan->others++;
    }
  }
}

// Filters on the clsact ingress (and egress) of `ifindex`, or -1 if they cannot be listed.
int filter_count(int ifindex, bool egress_too, PrefScan *scan) {
  const int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0) return -1;
  timeval tv{2, 0};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int in = count_filters(sock, ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS), scan);
  const int eg =
      in < 0 || !egress_too ? 0 : count_filters(sock, ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS), nullptr);
  close(sock);
  return in < 0 || eg < 0 ? -1 : in + eg;
}

// A new tcx link pinned at link_pin (where a stale link's pin is replaced: `replace_pin`),
// or on kernels without tcx (or with force_clsact) a clsact filter.
bool attach_new(int ifindex, const std::string &iface, int prog_fd, const std::string &link_pin, bool force_clsact,
                bool replace_pin, TcAttachment *out, std::string *err) {
  if (!force_clsact) {
    LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = kFlagBefore);
    const int lfd = bpf_link_create(prog_fd, ifindex, static_cast<bpf_attach_type>(kAttachTcxIngress), &lo);
    if (lfd >= 0) {
      if (replace_pin) unlink(link_pin.c_str());
      if (bpf_obj_pin(lfd, link_pin.c_str()) != 0) {
        *err = "cannot pin the tcx link at " + link_pin + ": " + errno_str(errno);
        close(lfd);
        return false;
      }
      *out = TcAttachment{TcHow::Tcx, lfd, false, false};
      return true;
    }
    DT_INFO("no tcx link on %s (%s: Linux 6.6 or later has them); attaching a clsact filter instead", iface.c_str(),
            errno_str(errno).c_str());
  }
  if (!attach_clsact(ifindex, iface, prog_fd, out, err)) return false;
  if (replace_pin) unlink(link_pin.c_str());
  return true;
}

}  // namespace

std::string tc_how_desc(TcHow how) {
  switch (how) {
    case TcHow::Tcx: return "tc ingress, tcx link";
    case TcHow::Clsact: return "tc ingress, clsact filter " + place();
    case TcHow::None: break;
  }
  return "tc ingress";
}

int clsact_filter_count(int ifindex) { return filter_count(ifindex, true); }

bool tc_attach(int ifindex, const std::string &iface, int prog_fd, const std::string &link_pin, bool qdisc_was_ours,
               bool force_clsact, TcAttachment *out, std::string *err) {
  int stale = -1;
  if (take_over(ifindex, prog_fd, link_pin, qdisc_was_ours, out, &stale)) return true;
  const bool ok = attach_new(ifindex, iface, prog_fd, link_pin, force_clsact, stale >= 0, out, err);
  // Unpinned once the new attachment is in, a stale link detaches here; otherwise its pin keeps
  // it enforcing.
  if (stale >= 0) close(stale);
  return ok;
}

bool tc_holds_ours(int ifindex) {
  if (const uint32_t id = filter_prog_id(ifindex); id != 0 && prog_is_ours(ifindex, id)) return true;
  uint32_t ids[16] = {}, count = 16;
  if (bpf_prog_query(ifindex, static_cast<bpf_attach_type>(kAttachTcxIngress), 0, nullptr, ids, &count) != 0)
    return errno != EINVAL;  // EINVAL: no tcx in this kernel; any other failure: not known to be clear
  for (uint32_t i = 0; i < count && i < 16; i++)
    if (prog_named(ids[i], kTcProgName) != 0) return true;  // ours, or not known
  return false;
}

std::string tc_remove(int ifindex, const std::string &link_pin, int link_fd, bool qdisc_ours, uint32_t own_prog_id) {
  std::string removed;
  // The link: unpinned and closed, it detaches once no one holds it.
  const int pinned = pinned_tcx_link(ifindex, link_pin);
  if (pinned >= 0 || link_fd >= 0) {
    unlink(link_pin.c_str());
    removed = "its tcx link";
  }
  if (pinned >= 0) close(pinned);
  if (link_fd >= 0) close(link_fd);
  // The filter, only if the program in it is ours.
  if (const uint32_t id = filter_prog_id(ifindex); id != 0 && (id == own_prog_id || prog_is_ours(ifindex, id))) {
    LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
    LIBBPF_OPTS(bpf_tc_opts, o, .handle = kTcHandle, .priority = kTcPriority);
    if (int rc = bpf_tc_detach(&hook, &o); rc == 0)
      removed += std::string(removed.empty() ? "" : ", ") + "its clsact filter";
    else DT_WARN("cannot remove dthrottle's clsact filter (ifindex %d): %s", ifindex, errno_str(rc).c_str());
  }
  // The qdisc, only if dthrottle created it and no one else's filter is on it.
  if (qdisc_ours) {
    const int others = clsact_filter_count(ifindex);
    if (others == 0) {
      LIBBPF_OPTS(bpf_tc_hook, both, .ifindex = ifindex,
                  .attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
      if (bpf_tc_hook_destroy(&both) == 0) removed += " and the clsact qdisc it had created";
    } else {
      DT_INFO("leaving the clsact qdisc dthrottle created (ifindex %d): %s", ifindex,
              others < 0 ? "cannot list its filters" : "other filters use it");
    }
  }
  return removed;
}

}  // namespace dt
