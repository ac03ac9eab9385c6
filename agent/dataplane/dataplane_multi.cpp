// dataplane_multi.cpp - --attach xdp-multi: dt_xdp in libxdp's dispatcher, loaded by libxdp
// from a second instance of the object that shares the first one's maps and settings.
#include <bpf/libbpf.h>

#include <cerrno>

#include "common/errno_str.h"
#include "common/log.h"
#include "dataplane/dataplane.h"
#include "dataplane/xdp_multi.h"
#include "dthrottle.skel.h"

namespace dt {

bool Dataplane::attach_multi(std::string *err) {
  if (std::string why = xdp_multi_refusal(); !why.empty()) {
    *err = "cannot use --attach xdp-multi on " + iface_ + ": " + why;
    return false;
  }
  // A previous agent's link of --attach xdp holds the hook alone: the dispatcher cannot
  // join it, so it goes first (the hook is unenforced until ours joins).
  if (remove_xdp_link())
    DT_INFO("switched %s from XDP alone to libxdp's dispatcher: removed dthrottle's XDP link", iface_.c_str());
  multi_skel_ = open_sharing_maps(err);
  if (!multi_skel_) return false;
  if (!xdp_multi_attach(multi_skel_->obj, ifindex_, iface_, xdp_frags_, &multi_prog_, &multi_previous_, err))
    return false;
  took_over_ = !multi_previous_.empty();
  mode_ = XdpMode::Native;
  return true;
}

dthrottle_bpf *Dataplane::open_sharing_maps(std::string *err) {
  dthrottle_bpf *s = dthrottle_bpf__open();
  if (!s) return *err = "cannot open the BPF object: " + errno_str(errno), nullptr;
  *s->rodata = *skel_->rodata;  // what the kernel was found to have (helpers, frags)
  bpf_program *p;
  bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, p == s->progs.dt_xdp);
  bpf_map *m;
  bpf_object__for_each_map(m, s->obj) {
    const bpf_map *mine = bpf_object__find_map_by_name(skel_->obj, bpf_map__name(m));
    bpf_map__set_pin_path(m, nullptr);  // the maps are the first instance's, pins and all
    if (!mine || bpf_map__reuse_fd(m, bpf_map__fd(mine)) != 0) {
      *err = std::string("cannot share the map ") + bpf_map__name(m) +
             " with libxdp's copy of dt_xdp: " + errno_str(errno);
      dthrottle_bpf__destroy(s);
      return nullptr;
    }
  }
  return s;
}

}  // namespace dt
