// test_map_catalog.cpp - the catalogue of maps (include/dthrottle/maps_catalog.h) is the
// object's: every map of dthrottle.bpf.o has its line, pinned as it says, and every line a
// map; every DT_MAP_* name is one of them; the table of maps in docs/internals.md lists each one.
#include <bpf/libbpf.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "dataplane/pin_layout.h"
#include "dthrottle.skel.h"
#include "dthrottle/common.h"
#include "dthrottle/lists.h"

namespace {

// The maps of the object, by name: pinned by name or not (libbpf sets a pin path at open
// for LIBBPF_PIN_BY_NAME maps).
std::map<std::string, bool> object_maps() {
  std::map<std::string, bool> out;
  LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = "/sys/fs/bpf/dthrottle-catalog-test");
  dthrottle_bpf *skel = dthrottle_bpf__open_opts(&oo);
  if (!skel) {
    ADD_FAILURE() << "cannot open the dthrottle BPF object: " << strerror(errno);
    return out;
  }
  bpf_map *map;
  bpf_object__for_each_map(map, skel->obj) {
    // .rodata holds the constants the agent sets before the load (dt_syncookie_helpers):
    // libbpf's own, never pinned, not a map of the catalogue.
    if (!bpf_map__is_internal(map)) out[bpf_map__name(map)] = bpf_map__pin_path(map) != nullptr;
  }
  dthrottle_bpf__destroy(skel);
  return out;
}

TEST(MapCatalog, ListsExactlyTheMapsOfTheObject) {
  const std::map<std::string, bool> object = object_maps();
  ASSERT_FALSE(object.empty());
  std::set<std::string> catalogued;
  for (const dt::MapEntry &m : dt::map_catalog()) {
    EXPECT_TRUE(catalogued.insert(m.name).second) << m.name << " is catalogued twice";
    auto it = object.find(m.name);
    if (it == object.end()) {
      ADD_FAILURE() << "maps_catalog.h lists '" << m.name << "', which is no map of dthrottle.bpf.o (bpf/maps.h)";
      continue;
    }
    EXPECT_EQ(it->second, m.pinned) << "map '" << m.name << "': the catalogue says "
                                    << (m.pinned ? "pinned" : "not pinned") << ", bpf/maps.h says otherwise";
    EXPECT_GE(m.layout, 1u) << m.name << ": layouts count from 1";
  }
  for (const auto &[name, pinned] : object)
    EXPECT_TRUE(catalogued.count(name)) << "map '" << name << "' of bpf/maps.h has no line in maps_catalog.h";
}

TEST(MapCatalog, EveryMapNameIsCatalogued) {
  std::set<std::string> catalogued;
  for (const dt::MapEntry &m : dt::map_catalog())
    if (m.pinned) catalogued.insert(m.name);
  for (const char *name :
       {DT_MAP_BUCKETS,        DT_MAP_STATS,           DT_MAP_POLICY,     DT_MAP_CONFIG,       DT_MAP_ACTIVE,
        DT_MAP_CLUSTER_EXEMPT, DT_MAP_CLUSTER_PORTS,   DT_MAP_RULES0,     DT_MAP_RULES1,       DT_MAP_RULE_STATS,
        DT_MAP_RULE_NAMES,     DT_MAP_RULE_WOULD_DROP, DT_MAP_RULE_BYTES, DT_MAP_DROP_PENDING, DT_MAP_PREFIX_POLICY,
        DT_MAP_PREFIX_DROPS,   DT_MAP_LAYOUT,          DT_MAP_LISTS_V4,   DT_MAP_LISTS_V6,     DT_MAP_LIST_STATS})
    EXPECT_TRUE(catalogued.count(name)) << "DT_MAP_* name '" << name << "' is no pinned map of the catalogue";
  // The batches are staged by the agent and never pinned (DT_MAP_DEBIT_BATCH, DT_MAP_COLLECT_BATCH).
  for (const char *name : {DT_MAP_DEBIT_BATCH, DT_MAP_COLLECT_BATCH}) {
    bool found = false;
    for (const dt::MapEntry &m : dt::map_catalog()) found = found || name == std::string(m.name);
    EXPECT_TRUE(found) << "DT_MAP_* name '" << name << "' is not catalogued";
  }
}

// The table of docs/internals.md under "### The maps": one row per map, "| `name` | yes|no | ...".
TEST(MapCatalog, ReadmeTableListsEveryMap) {
  std::ifstream in("docs/internals.md");
  ASSERT_TRUE(in) << "docs/internals.md not found: run the tests from the top of the tree (tests/run_all.sh does)";
  std::map<std::string, bool> rows;
  const std::regex row(R"(^\| `([a-z0-9_]+)` \| (yes|no) \|)");
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) in_section = line == "### The maps";
    std::smatch m;
    if (in_section && std::regex_search(line, m, row)) rows[m[1]] = m[2] == "yes";
  }
  ASSERT_FALSE(rows.empty()) << "docs/internals.md has no table of maps under '### The maps'";
  for (const dt::MapEntry &m : dt::map_catalog()) {
    auto it = rows.find(m.name);
    if (it == rows.end()) {
      ADD_FAILURE() << "docs/internals.md's table of maps lacks '" << m.name << "'";
      continue;
    }
    EXPECT_EQ(it->second, m.pinned) << "docs/internals.md's table says '" << m.name << "' is "
                                    << (it->second ? "" : "not ") << "pinned; the catalogue says otherwise";
    rows.erase(it);
  }
  for (const auto &[name, pinned] : rows)
    ADD_FAILURE() << "docs/internals.md's table lists '" << name << "', no catalogued map";
}

}  // namespace
