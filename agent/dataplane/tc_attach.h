// tc_attach.h - the tc ingress attachment of --attach tc: a tcx link (Linux 6.6+), else a clsact filter.
//
// On kernels with tcx the program is attached through a BPF link, pinned like the
// XDP link: it survives the agent and a new agent takes it over with
// bpf_link_update. On older kernels (Debian 12's 6.1) it is a cls_bpf filter in
// direct-action mode on the clsact qdisc's ingress, at a fixed place (kTcPriority,
// kTcHandle) where a new agent finds it and swaps its program in atomically
// (replace). Either way it goes first, drops what the throttle drops, and passes
// everything else on (TC_ACT_UNSPEC) to whatever tc programs or filters follow.
// Removal takes away only what dthrottle added: its link or its filter, and the
// clsact qdisc only if dthrottle created it and no filter of anyone else is on it.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// Where dthrottle's clsact filter sits (tc filter show dev IFACE ingress: pref 1 handle 0xd7).
constexpr unsigned kTcPriority = 1;
constexpr unsigned kTcHandle = 0xd7;
// The name of the tc program (as `bpftool prog` and tc show it): how a filter is known as ours.
constexpr const char *kTcProgName = "dt_tc";

enum class TcHow { None, Tcx, Clsact };

struct TcAttachment {
  TcHow how = TcHow::None;
  int link_fd = -1;            // tcx: the link (pinned at link_pin)
  bool took_over = false;      // an attachment a previous agent left was taken over
  bool created_qdisc = false;  // clsact: dthrottle created the qdisc (removed with the filter if unused)
};

// "tc ingress (tcx link)" / "tc ingress (clsact filter pref 1 handle 0xd7)".
std::string tc_how_desc(TcHow how);

// Attaches prog_fd at tc ingress of `ifindex`: takes over the tcx link pinned at `link_pin` or
// dthrottle's clsact filter if a previous agent left one (created_qdisc as that agent
// recorded it: `qdisc_was_ours`), else creates a tcx link (pinned at link_pin), or on kernels
// without tcx (or with force_clsact) a clsact filter. False with a sentence in *err.
bool tc_attach(int ifindex, const std::string &iface, int prog_fd, const std::string &link_pin, bool qdisc_was_ours,
               bool force_clsact, TcAttachment *out, std::string *err);

// Removes dthrottle's tc attachment of `ifindex`, whichever kind: the link pinned at link_pin
// (closing link_fd if open) and/or dthrottle's clsact filter, and the clsact qdisc if
// `qdisc_ours` and nothing else uses it. Returns what it removed, as a phrase ("" if nothing).
// A filter holding `own_prog_id` (the caller's program) is ours without asking the kernel for
// the program by id (BPF_PROG_GET_FD_BY_ID needs CAP_SYS_ADMIN, which the agent dropped).
std::string tc_remove(int ifindex, const std::string &link_pin, int link_fd, bool qdisc_ours, uint32_t own_prog_id = 0);

// True unless the tc ingress of `ifindex` is known to hold no program named dt_tc (a clsact
// filter at dthrottle's place, or a tcx program): what a previous agent left that would see
// the frames after an XDP program.
bool tc_holds_ours(int ifindex);

// 1 if the program `prog_id` is named `name`, 0 if not, -1 if it cannot be asked (errno:
// EPERM without CAP_SYS_ADMIN, ENOENT once it is gone).
int prog_named(uint32_t prog_id, const char *name);

// The number of tc filters on the clsact qdisc of `ifindex` (ingress and egress), or -1 if
// it cannot be read (no clsact qdisc: 0).
int clsact_filter_count(int ifindex);

}  // namespace dt
