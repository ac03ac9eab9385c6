// pin_layout.cpp - see pin_layout.h.
#include "dataplane/pin_layout.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "dthrottle/common.h"

namespace dt {

const std::vector<MapEntry> &map_catalog() {
  static const std::vector<MapEntry> catalog = {
#define DT_MAP_ENTRY(name, pinned, layout, what) {#name, (pinned) == DT_PINNED, (layout), (what)},
      DT_MAPS(DT_MAP_ENTRY)
#undef DT_MAP_ENTRY
  };
  return catalog;
}

uint32_t pinned_layout(const std::string &pin_dir) {
  bool any = false;
  for (const MapEntry &m : map_catalog())
    any = any ||
          (m.pinned && std::string(m.name) != DT_MAP_LAYOUT && access((pin_dir + "/" + m.name).c_str(), F_OK) == 0);
  if (!any) return 0;  // a marker alone (left by an agent that did not know it) marks nothing
  const int fd = bpf_obj_get((pin_dir + "/" + DT_MAP_LAYOUT).c_str());
  if (fd < 0) return 1;
  uint32_t zero = 0, version = 0;
  const bool read = bpf_map_lookup_elem(fd, &zero, &version) == 0;
  close(fd);
  // Still 0: an agent stopped between its load and write_layout. Read as layout 1, whose
  // migration remakes the most maps: never fewer than needed.
  return read && version != 0 ? version : 1;
}

std::vector<std::string> maps_to_recreate(const std::vector<MapEntry> &catalog, uint32_t from) {
  std::vector<std::string> out;
  for (const MapEntry &m : catalog)
    if (m.pinned && m.layout > from) out.push_back(m.name);
  return out;
}

bool prepare_pins(const std::string &pin_dir, const std::vector<MapEntry> &catalog, uint32_t version,
                  std::string *err) {
  const uint32_t pinned = pinned_layout(pin_dir);
  if (pinned == 0 || pinned == version) return true;
  if (pinned > version) {
    *err = "the maps pinned in " + pin_dir + " are layout " + std::to_string(pinned) + ", this agent is layout " +
           std::to_string(version) +
           " (older): start the newer agent again, or stop the agent that pinned "
           "them without --keep (or remove " +
           pin_dir + ", which forgets every bucket) and start this one";
    return false;
  }
  std::string recreated;
  for (const std::string &name : maps_to_recreate(catalog, pinned)) {
    const std::string path = pin_dir + "/" + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      *err = "cannot remove " + path + " (layout " + std::to_string(pinned) + ", this agent is layout " +
             std::to_string(version) + "): " + strerror(errno);
      return false;
    }
    recreated += (recreated.empty() ? "" : ", ") + name;
  }
  DT_INFO("maps pinned in %s are layout %u, this agent is layout %u: %s%s; the other maps are kept", pin_dir.c_str(),
          pinned, version, recreated.empty() ? "none changed" : "made anew: ", recreated.c_str());
  return true;
}

int write_layout(int layout_fd, uint32_t version) {
  uint32_t zero = 0;
  return bpf_map_update_elem(layout_fd, &zero, &version, BPF_ANY) == 0 ? 0 : -errno;
}

}  // namespace dt
