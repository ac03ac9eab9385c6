// prog_maps.h - open the maps a loaded BPF program uses, by name (for tests whose
// maps the fixture does not expose: the rule banks, the per-rule counters).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "bpf_fixture.h"
#include "dataplane/policy.h"

namespace dt::test {

// An fd of the map called `name` among those program `prog_fd` uses, or -errno.
int prog_map_fd(int prog_fd, const std::string &name);

// One map to open: its name, and where its fd goes.
struct ProgMap {
  const char *name;
  int *fd;
};

// Opens each of `maps` among those of program `prog_fd`. False, with a test failure
// naming each map that is not there (its fd is then -errno), if any is missing.
bool open_prog_maps(int prog_fd, std::initializer_list<ProgMap> maps);

// Closes each fd that is open (>= 0).
void close_fds(std::initializer_list<int> fds);

// A BpfFixture that also opens the XDP program's rule maps (maps_: the policy, both
// banks and the config, for publish_rules) and its per-rule counters (rule_stats).
class RuleMapsFixture : public BpfFixture {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The bucket whose key is `addr` (already cut to the rule's key prefix) under `rule`,
  // as users read it (read_bucket), or nullopt; a failure if `addr` is no address.
  std::optional<dt_bucket> bucket_of(const std::string &addr, uint32_t rule);

  RuleMaps maps_;
  int rule_stats_fd_ = -1;
};

}  // namespace dt::test
