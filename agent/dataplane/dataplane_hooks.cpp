// dataplane_hooks.cpp - the frames' owner and the other hook: which of our programs counts
// the frames (struct dt_config.owner, docs/internals.md "One owner of the frames"), and what
// a switch between --attach xdp and tc removes of a previous agent's on the hook not chosen.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <unistd.h>

#include <cerrno>

#include "common/errno_str.h"
#include "common/log.h"
#include "dataplane/dataplane.h"
#include "dataplane/pin_dir.h"
#include "dataplane/policy.h"
#include "dataplane/xdp_multi.h"
#include "dthrottle/common.h"

namespace dt {
namespace {

// True unless the XDP hook of ifindex is known to hold no dt_xdp, alone or in libxdp's dispatcher.
bool xdp_holds_ours(int ifindex) {
  if (!xdp_multi_ours(ifindex).empty()) return true;
  uint32_t id = 0;
  if (!xdp_hook_prog_id(ifindex, &id)) return true;
  return id != 0 && prog_named(id, kXdpProgName) != 0;
}

}  // namespace

bool Dataplane::claim_frames(std::string *err) {
  if (int rc = set_config_owner(config_fd(), instance_); rc != 0) {
    *err = "attached, but cannot make this agent's program the owner of the frames in the config map: " + errno_str(rc);
    return false;
  }
  return true;
}

// Plain XDP and tc swap programs in one step: once the other hook holds none of ours either,
// no program but ours sees the frames, and owner 0 lets each packet's owner test stop at
// the zero (no read of dt_instance). In libxdp's dispatcher a later agent's program joins
// beside ours: the owner stays.
void Dataplane::release_frames() {
  if (hook_ == AttachHook::XdpMulti) return;
  if (hook_ == AttachHook::Tc ? xdp_holds_ours(ifindex_) : tc_holds_ours(ifindex_)) {
    DT_INFO("a previous dthrottle program is still on the other hook of %s: this agent's stays the owner of the frames",
            iface_.c_str());
    return;
  }
  if (int rc = set_config_owner(config_fd(), 0); rc != 0)
    DT_WARN("cannot clear the owner of the frames in the config map (the owner test stays): %s", errno_str(rc).c_str());
}

bool Dataplane::remove_xdp_link() {
  const std::string link_pin = pin_dir_ + "/" + DT_PIN_LINK;
  const int lfd = bpf_obj_get(link_pin.c_str());
  if (lfd < 0) return false;
  bpf_link_info info{};
  uint32_t len = sizeof info;
  const bool xdp = bpf_obj_get_info_by_fd(lfd, &info, &len) == 0 && info.type == BPF_LINK_TYPE_XDP;
  if (xdp) unlink(link_pin.c_str());
  close(lfd);
  return xdp;
}

void Dataplane::remove_other_hook(int ifindex) {
  if (hook_ == AttachHook::Tc) {
    // A pinned XDP link of a previous agent run with --attach xdp: removed now that tc enforces;
    // so is our program in libxdp's dispatcher (--attach xdp-multi).
    if (remove_xdp_link()) DT_INFO("switched %s from XDP to tc ingress: removed dthrottle's XDP link", iface_.c_str());
    if (xdp_multi_detach_ids(ifindex, xdp_multi_ours(ifindex)) > 0)
      DT_INFO("switched %s from libxdp's dispatcher to tc ingress: detached dthrottle's program from it",
              iface_.c_str());
    return;
  }
  const std::string removed = tc_remove(ifindex, pin_dir_ + "/" + DT_PIN_TC_LINK, -1, qdisc_recorded(pin_dir_));
  if (!removed.empty()) DT_INFO("switched %s from tc ingress to XDP: removed %s", iface_.c_str(), removed.c_str());
}

}  // namespace dt
