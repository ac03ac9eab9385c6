// prog_maps.h - open the maps a loaded BPF program uses, by name (for tests whose
// maps the fixture does not expose: the rule banks, the per-rule counters); and which rule
// a packet's verdict came from, by those counters.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

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

// A packet's verdict and the rule whose counters it moved.
struct RuleOutcome {
  int verdict = -1;
  int rule = -1;  // whose counters moved; -1 if none or several did
  bool operator==(const RuleOutcome &o) const { return verdict == o.verdict && rule == o.rule; }
};
std::ostream &operator<<(std::ostream &os, const RuleOutcome &o);

// A BpfFixture that also opens the XDP program's rule maps (maps_: the policy, both
// banks and the config, for publish_rules) and its per-rule counters (rule_stats).
class RuleMapsFixture : public BpfFixture {
 protected:
  void SetUp() override;
  void TearDown() override;

  // The bucket whose key is `addr` (already cut to the rule's key prefix) under `rule`,
  // as users read it (read_bucket), or nullopt; a failure if `addr` is no address.
  std::optional<dt_bucket> bucket_of(const std::string &addr, uint32_t rule);

  // The counters of `rule`, summed over the CPUs.
  dt_rule_stats rule_stats(uint32_t rule);
  // One packet: its verdict and the one rule among the first `rules` whose counters it moved
  // (by one packet; -1 if none, several, or one by more).
  RuleOutcome run_counted(const std::vector<uint8_t> &frame, size_t rules);
  // Parses `toml` over the default rule (rate, burst; rate 0: none), compiles it and
  // publishes it with its conditions, the way the agent's --rules and reload do; *rules
  // (if given): how many rules it has. A fatal failure if any step refuses it.
  void publish_toml(const std::string &toml, double rate, uint64_t burst, size_t *rules = nullptr);

  RuleMaps maps_;
  int rule_stats_fd_ = -1;
};

}  // namespace dt::test
