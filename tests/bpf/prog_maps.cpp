// prog_maps.cpp - see prog_maps.h.
#include "prog_maps.h"

#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/address.h"
#include "dataplane/map_reader.h"
#include "rules/rules.h"

namespace dt::test {

int prog_map_fd(int prog_fd, const std::string &name) {
  bpf_prog_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return -errno;
  const uint32_t n = info.nr_map_ids;
  std::vector<uint32_t> ids(n);
  info = bpf_prog_info{};
  info.nr_map_ids = n;
  info.map_ids = reinterpret_cast<uint64_t>(ids.data());
  len = sizeof info;
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return -errno;
  for (uint32_t i = 0; i < n && i < info.nr_map_ids; i++) {
    const int fd = bpf_map_get_fd_by_id(ids[i]);
    if (fd < 0) continue;
    bpf_map_info mi{};
    uint32_t mlen = sizeof mi;
    if (bpf_obj_get_info_by_fd(fd, &mi, &mlen) == 0 && name == mi.name) return fd;
    close(fd);
  }
  return -ENOENT;
}

bool open_prog_maps(int prog_fd, std::initializer_list<ProgMap> maps) {
  bool all = true;
  for (const ProgMap &m : maps) {
    *m.fd = prog_map_fd(prog_fd, m.name);
    if (*m.fd >= 0) continue;
    ADD_FAILURE() << "cannot find map '" << m.name << "' among the program's maps: " << strerror(-*m.fd);
    all = false;
  }
  return all;
}

void close_fds(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) close(fd);
}

void RuleMapsFixture::SetUp() {
  BpfFixture::SetUp();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(open_prog_maps(xdp_fd(), {{"policy", &maps_.policy_fd},
                                        {"rules0", &maps_.rules_fd[0]},
                                        {"rules1", &maps_.rules_fd[1]},
                                        {"rule_stats", &rule_stats_fd_}}));
  maps_.config_fd = config_fd();
}

void RuleMapsFixture::TearDown() {
  close_fds({maps_.policy_fd, maps_.rules_fd[0], maps_.rules_fd[1], rule_stats_fd_});
  BpfFixture::TearDown();
}

std::optional<dt_bucket> RuleMapsFixture::bucket_of(const std::string &addr, uint32_t rule) {
  dt_key key{};
  if (!key_from_string(addr, &key)) {
    ADD_FAILURE() << "not an address: " << addr;
    return std::nullopt;
  }
  key.rule = rule;
  dt_bucket b{};
  if (read_bucket(buckets_fd(), drop_pending_fd(), key, &b) != 0) return std::nullopt;
  return b;
}

void RuleMapsFixture::publish_toml(const std::string &toml, double rate, uint64_t burst, size_t *rules) {
  RuleSet rs = default_rules(rate, burst);
  CompiledRules c;
  std::string err;
  ASSERT_TRUE(parse_rules(toml, "test.toml", &rs, &err)) << err;
  ASSERT_TRUE(compile_rules(rs, &c, &err)) << err;
  const int rc = publish_rules(rule_maps(), c.policies, c.lpm, {}, {}, c.cond);
  ASSERT_EQ(rc, 0) << "publish_rules: " << strerror(-rc);
  if (rules) *rules = rs.rules.size();
}

std::ostream &operator<<(std::ostream &os, const RuleOutcome &o) {
  return os << "{" << verdict_name(o.verdict) << ", rule " << o.rule << "}";
}

dt_rule_stats RuleMapsFixture::rule_stats(uint32_t rule) {
  return summed_per_cpu<dt_rule_stats>(map_fd(DT_MAP_RULE_STATS), rule);
}

RuleOutcome RuleMapsFixture::run_counted(const std::vector<uint8_t> &frame, size_t rules) {
  std::vector<dt_rule_stats> before(rules);
  for (size_t r = 0; r < rules; r++) before[r] = rule_stats(static_cast<uint32_t>(r));
  RuleOutcome o;
  o.verdict = run(frame);
  int moved = 0;
  for (size_t r = 0; r < rules; r++) {
    const dt_rule_stats after = rule_stats(static_cast<uint32_t>(r));
    const uint64_t delta = (after.passed - before[r].passed) + (after.dropped - before[r].dropped);
    if (delta == 0) continue;
    moved++;
    o.rule = delta == 1 ? static_cast<int>(r) : -1;
  }
  if (moved != 1) o.rule = -1;
  return o;
}

}  // namespace dt::test
