// privileges.h - the capabilities the agent keeps once it is set up, and the drop itself.
//
// Loading and attaching need CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON (or CAP_SYS_ADMIN);
// what the agent does afterwards needs far less (docs/security.md, "Privileges", gives the
// kernel's rules):
//   map reads and writes on the fds it holds (rules reloads, peers, bans), dt_debit and
//   dt_collect runs (BPF_PROG_RUN), the ring buffer, closing an XDP or tcx link at exit,
//   unpinning: no capability (the fds are the permission; the pins are root's files and
//   the agent stays uid 0) ...
//   ... except on Linux 5.17 and 5.18 with kernel.unprivileged_bpf_disabled set, where
//   every bpf() command needs CAP_BPF (5.19 narrowed that to map creation and loading);
//   removing a clsact filter (and the qdisc dthrottle created) at exit: CAP_NET_ADMIN;
//   removing the SYNPROXY table (host/synproxy.h) at exit: CAP_NET_ADMIN (restoring its
//   sysctl needs none: /proc/sys/net is root's, and the agent stays uid 0);
//   leaving libxdp's dispatcher at exit (--attach xdp-multi): libxdp opens the dispatcher
//   by id (CAP_SYS_ADMIN), loads its replacement without dthrottle and attaches it
//   (CAP_BPF, CAP_NET_ADMIN): so that mode, without --keep, keeps all three.
// So the agent keeps at most CAP_BPF and CAP_NET_ADMIN (and CAP_SYS_ADMIN with
// --attach xdp-multi), and usually nothing: in its
// effective, permitted and bounding sets alike, with no_new_privs set (no execve can give
// any back), in every thread it has at the time (capabilities are per thread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

// What the agent will still do that a capability guards.
struct PrivilegeNeeds {
  bool bpf_gated = false;          // every bpf() command needs CAP_BPF (bpf_commands_need_cap_bpf)
  bool clsact_detach = false;      // a clsact filter to remove at exit (--attach tc without tcx, no --keep)
  bool new_maps = false;           // reloads create maps: the allow and deny lists' fresh tries (docs/lists.md)
  bool synproxy = false;           // the SYNPROXY table of syn_cookies rules to replace (reload) and remove at exit
  bool dispatcher_detach = false;  // leaving libxdp's dispatcher at exit (--attach xdp-multi, no --keep)
};

struct KeptCapability {
  int cap;           // CAP_*
  const char *name;  // "CAP_NET_ADMIN"
  const char *why;   // what it is kept for
};

// The capabilities kept for `needs`, in CAP_* order.
std::vector<KeptCapability> capabilities_to_keep(const PrivilegeNeeds &needs);

// Whether this kernel refuses bpf() commands on objects the agent holds without CAP_BPF
// (Linux before 5.19 with kernel.unprivileged_bpf_disabled set): tried from a short-lived
// thread that drops CAP_BPF and CAP_SYS_ADMIN and reads the info of `map_fd`.
bool bpf_commands_need_cap_bpf(int map_fd);

// Keeps only `keep` in the effective, permitted and bounding sets of every thread of the
// process, clears the inheritable and ambient sets and sets no_new_privs; then reads
// every thread's sets back from /proc/self/task. False with a sentence in *err if a
// thread still holds more. Dropping bounding-set entries needs CAP_SETPCAP: without it
// they stay (a warning in *warning; no_new_privs still keeps execve from regaining any).
bool drop_privileges(const std::vector<KeptCapability> &keep, std::string *warning, std::string *err);

// For an error a system call gave after the drop: with -EPERM, a sentence saying that the
// agent runs without the capabilities it dropped and what to do; "" otherwise.
std::string refused_after_drop(int negative_errno);

// "CAP_NET_ADMIN (why), ..." or "none".
std::string describe_capabilities(const std::vector<KeptCapability> &caps);

// The capability names set in `mask` (bit n: capability n): "CAP_BPF,CAP_NET_ADMIN", "" if none.
std::string capability_names(uint64_t mask);

}  // namespace dt
