// pin_layout.h - the layout version of the pinned maps (include/dthrottle/maps_catalog.h):
// what an agent does with pins another version of it left.
//
// The pins carry the version in the pinned map `layout` (one __u32, written after every
// load). Pins without it are layout 1, the layout of every agent before the version
// existed. Before loading, the agent compares the pins' version with its own:
//   - the same, or no pins: nothing to do;
//   - older pins: the maps whose layout changed since are unpinned (load creates them
//     anew, empty) and the others are reused: buckets and counters are kept;
//   - newer pins: refused, with what to do (this agent cannot know their maps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dthrottle/maps_catalog.h"

namespace dt {

// One line of the catalogue.
struct MapEntry {
  const char *name;
  bool pinned;
  uint32_t layout;  // the version in which it last changed
  const char *what;
};

// The catalogue (DT_MAPS), in the order of bpf/maps.h.
const std::vector<MapEntry> &map_catalog();

// The highest layout of the catalogue: the version this agent writes.
constexpr uint32_t layout_version() {
  uint32_t v = 1;
#define DT_MAX_LAYOUT(name, pinned, layout, what) v = (layout) > v ? (layout) : v;
  DT_MAPS(DT_MAX_LAYOUT)
#undef DT_MAX_LAYOUT
  return v;
}
constexpr uint32_t kLayoutVersion = layout_version();

// The layout of the pins in pin_dir: 0 when it holds no map of the catalogue, 1 for maps
// without a `layout` map (before the version), else the version that map holds.
uint32_t pinned_layout(const std::string &pin_dir);

// The pinned maps of `catalog` an agent of layout `to` must make anew over pins of layout
// `from` (< to): those whose layout is newer than `from`.
std::vector<std::string> maps_to_recreate(const std::vector<MapEntry> &catalog, uint32_t from);

// Makes the pins of pin_dir fit an agent of layout `version` (kLayoutVersion; tests pass
// another with their own catalogue): unpins the maps to recreate (logged), or refuses pins
// of a newer layout. False with a sentence in *err (what to do) when it refuses or cannot
// unpin. Call it with the pin directory's lock held (no other agent uses the pins).
bool prepare_pins(const std::string &pin_dir, const std::vector<MapEntry> &catalog, uint32_t version, std::string *err);

// Writes `version` into the layout map (its fd): 0 or -errno.
int write_layout(int layout_fd, uint32_t version);

}  // namespace dt
