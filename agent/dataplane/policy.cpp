// policy.cpp - the agent owns refill policy; the kernel only applies it.
//
// Why two banks: a userspace update of an array element is a memcpy into the live
// value, so a packet could read a new interval_ns with an old burst_ns. Instead the
// agent writes the bank that no packet reads (slot rule*2 + !bank), then flips
// config.bank. A packet reads bank once and then a complete, stable policy.
// Publishing twice in quick succession could rewrite a bank a slow reader still
// reads, so a publish waits until a grace period (far longer than one packet's
// program run) has passed since the previous flip; policy changes are rare (start-up,
// reload, adaptive limits: at most once per report period).
#include "dataplane/policy.h"

#include <bpf/bpf.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

namespace dt {

double byte_rate_precision(double rate) {
  const double exact = 1e9 / rate;
  return std::fabs(std::round(exact) - exact) / exact;
}

namespace {

// The limits of a byte budget (make_policy's checks of the packet limits do not apply).
bool check_byte_budget(double rate, uint64_t burst, std::string *err) {
  char buf[512];
  if (const double e = rate > 0 ? byte_rate_precision(rate) : 0; e > kByteRateMaxError) {
    snprintf(buf, sizeof buf,
             "byte rate %.6g B/s cannot be kept within 1%%: one byte every %.3g ns rounds to %.0f ns "
             "(%.1f%% off); rates up to 20MB/s (160Mbit/s) are always exact to 1%%, faster ones only "
             "when 1e9/rate is close to a whole number of ns: 1GB/s (8Gbit/s, the highest), 500MB/s, "
             "250MB/s, 125MB/s (1Gbit/s), 100MB/s, 50MB/s",
             rate, 1e9 / rate, std::round(1e9 / rate), e * 100);
    return *err = buf, false;
  }
  if (!(rate >= kByteRateMin && rate <= kByteRateMax)) {
    snprintf(buf, sizeof buf, "byte rate %.6g B/s is out of range: use 1B/s to 1GB/s (8Gbit/s)", rate);
    return *err = buf, false;
  }
  if (burst < kMinByteBurst || burst > DT_BURST_MAX) {
    snprintf(buf, sizeof buf,
             "byte burst %llu B is out of range: use %llu B (one full-size Ethernet frame, which a smaller "
             "burst could never admit) to 1GB, e.g. 15kB",
             static_cast<unsigned long long>(burst), static_cast<unsigned long long>(kMinByteBurst));
    return *err = buf, false;
  }
  return true;
}

}  // namespace

bool make_policy(double rate, uint64_t burst, dt_policy *out, std::string *err, bool bytes) {
  if (bytes) {
    if (!check_byte_budget(rate, burst, err)) return false;
  } else if (!(rate >= DT_RATE_MIN && rate <= DT_RATE_MAX)) {
    *err = "rate " + std::to_string(rate) + " is out of range: use 0.000001 to 1000000 packets per second";
    return false;
  }
  if (!bytes && (burst < 1 || burst > DT_BURST_MAX)) {
    *err = "burst " + std::to_string(burst) + " is out of range: use 1 to 1000000000 packets";
    return false;
  }
  const uint64_t interval = static_cast<uint64_t>(std::llround(1e9 / rate));
  if (burst > (1ull << 62) / interval) {
    *err = "burst " + std::to_string(burst) + " at rate " + std::to_string(rate) +
           "/s would take more than 146 years to refill: lower the burst or raise the rate";
    return false;
  }
  *out = dt_policy{};
  out->interval_ns = interval;
  out->burst_ns = burst * interval;
  out->action = DT_ACT_THROTTLE;
  out->v4_key_bits = 32;  // a bucket per IPv4 address
  out->v6_key_bits = 64;  // and per IPv6 /64: one client owns a whole /64
  out->flags = bytes ? DT_POL_BYTES : 0;
  return true;
}

double policy_rate(const dt_policy &p) { return p.interval_ns ? 1e9 / static_cast<double>(p.interval_ns) : 0.0; }

unsigned long long policy_burst(const dt_policy &p) { return p.interval_ns ? p.burst_ns / p.interval_ns : 0; }

namespace {

// Each rule's value into bank `bank` of a banked per-rule map (slot rule * 2 + bank): the
// prefix budgets (dt_prefix_policy), or the dst prefixes and len ranges (dt_rule_cond).
// Rules past the end of `per_rule` get a zeroed value: none.
template <class Value>
int write_rule_bank(int fd, uint32_t bank, const std::vector<Value> &per_rule) {
  for (uint32_t rule = 0; rule < DT_MAX_RULES; rule++) {
    const Value none{};
    uint32_t slot = rule * 2 + bank;
    if (bpf_map_update_elem(fd, &slot, rule < per_rule.size() ? &per_rule[rule] : &none, BPF_ANY) != 0) return -errno;
  }
  return 0;
}

// What publish writes beside the policies (null: keep the bank's, see publish_policies_only).
struct RuleParts {
  const std::vector<std::pair<dt_lpm_key, dt_rule_set>> *lpm = nullptr;
  const std::vector<std::string> *names = nullptr;
  const std::vector<dt_prefix_policy> *prefix = nullptr;
  const std::vector<dt_rule_cond> *cond = nullptr;
};

// publish_rules, or with parts.lpm == nullptr only the policies (see publish_policies_only).
int publish(const RuleMaps &maps, const std::vector<dt_policy> &policies, const RuleParts &parts) {
  const auto *lpm = parts.lpm;
  const auto *names = parts.names;
  const auto *prefix = parts.prefix;
  if (policies.size() > DT_MAX_RULES || (lpm && lpm->size() > DT_MAX_PREFIXES)) return -EINVAL;
  if (prefix && prefix->size() > DT_MAX_RULES) return -EINVAL;
  if (parts.cond && (parts.cond->size() > DT_MAX_RULES || (!parts.cond->empty() && maps.cond_fd < 0))) return -EINVAL;
  if (lpm && !lpm->empty() && (maps.rules_fd[0] < 0 || maps.rules_fd[1] < 0)) return -EINVAL;
  // Grace period: the bank about to be rewritten was live until the last flip; a
  // packet that read the bank index just before it may still be reading it.
  static std::chrono::steady_clock::time_point last_flip{};
  const auto grace = std::chrono::milliseconds(20);
  if (const auto since = std::chrono::steady_clock::now() - last_flip; since < grace)
    std::this_thread::sleep_for(grace - since);
  uint32_t zero = 0;
  dt_config cfg{};
  if (bpf_map_lookup_elem(maps.config_fd, &zero, &cfg) != 0) return -errno;
  const uint32_t next_bank = (cfg.bank & 1) ^ 1;
  for (uint32_t rule = 0; rule < DT_MAX_RULES; rule++) {
    const dt_policy empty{};
    uint32_t slot = rule * 2 + next_bank;
    if (bpf_map_update_elem(maps.policy_fd, &slot, rule < policies.size() ? &policies[rule] : &empty, BPF_ANY) != 0)
      return -errno;
  }
  if (lpm && maps.rules_fd[next_bank] >= 0) {
    // Empty the idle trie (no packet reads it), then fill it.
    const int fd = maps.rules_fd[next_bank];
    dt_lpm_key k{};
    while (bpf_map_get_next_key(fd, nullptr, &k) == 0)
      if (bpf_map_delete_elem(fd, &k) != 0) return -errno;
    for (const auto &[key, set] : *lpm)
      if (bpf_map_update_elem(fd, &key, &set, BPF_ANY) != 0) return -errno;
  }
  if (prefix && maps.prefix_fd >= 0)
    if (int rc = write_rule_bank(maps.prefix_fd, next_bank, *prefix); rc != 0) return rc;
  if (parts.cond && maps.cond_fd >= 0)
    if (int rc = write_rule_bank(maps.cond_fd, next_bank, *parts.cond); rc != 0) return rc;
  if (names && maps.names_fd >= 0) {
    for (uint32_t rule = 0; rule < DT_MAX_RULES; rule++) {  // past names: cleared
      dt_rule_name n{};
      if (rule < names->size()) strncpy(n.name, (*names)[rule].c_str(), sizeof n.name - 1);
      if (bpf_map_update_elem(maps.names_fd, &rule, &n, BPF_ANY) != 0) return -errno;
    }
  }
  cfg.bank = next_bank;
  // Handshakes' ACKs are checked for SYN cookies only while a rule may send them.
  const bool cookies =
      std::any_of(policies.begin(), policies.end(), [](const dt_policy &p) { return p.flags & DT_POL_SYN_COOKIES; });
  cfg.flags = cookies ? (cfg.flags | DT_CFG_SYN_COOKIES) : (cfg.flags & ~DT_CFG_SYN_COOKIES);
  if (lpm) cfg.flags = lpm->empty() ? (cfg.flags & ~DT_CFG_RULES) : (cfg.flags | DT_CFG_RULES);
  if (bpf_map_update_elem(maps.config_fd, &zero, &cfg, BPF_ANY) != 0) return -errno;
  last_flip = std::chrono::steady_clock::now();
  return 0;
}

}  // namespace

int publish_rules(const RuleMaps &maps, const std::vector<dt_policy> &policies,
                  const std::vector<std::pair<dt_lpm_key, dt_rule_set>> &lpm, const std::vector<std::string> &names,
                  const std::vector<dt_prefix_policy> &prefix, const std::vector<dt_rule_cond> &cond) {
  return publish(maps, policies, RuleParts{&lpm, &names, &prefix, &cond});
}

int publish_policies_only(const RuleMaps &maps, const std::vector<dt_policy> &policies) {
  return publish(maps, policies, RuleParts{});
}

int modify_config(int config_fd, const std::function<void(dt_config &)> &change) {
  uint32_t zero = 0;
  dt_config cfg{};
  if (bpf_map_lookup_elem(config_fd, &zero, &cfg) != 0) return -errno;
  change(cfg);
  if (bpf_map_update_elem(config_fd, &zero, &cfg, BPF_ANY) != 0) return -errno;
  return 0;
}

int update_config_flags(int config_fd, uint32_t set, uint32_t clear, uint32_t coarse_lag_ns) {
  return modify_config(config_fd, [&](dt_config &cfg) {
    cfg.flags = (cfg.flags | set) & ~clear;
    if (coarse_lag_ns) cfg.coarse_lag_ns = coarse_lag_ns;
  });
}

int set_config_owner(int config_fd, uint32_t owner) {
  return modify_config(config_fd, [&](dt_config &cfg) { cfg.owner = owner; });
}

namespace {

// The slot of `rule` in the live bank (rule*2 + config.bank): the one packets read now.
int live_slot(int config_fd, uint32_t rule, uint32_t *slot) {
  uint32_t zero = 0;
  dt_config cfg{};
  if (bpf_map_lookup_elem(config_fd, &zero, &cfg) != 0) return -errno;
  *slot = rule * 2 + (cfg.bank & 1);
  return 0;
}

}  // namespace

int read_live_policy(int policy_fd, int config_fd, uint32_t rule, dt_policy *out) {
  uint32_t slot = 0;
  if (int rc = live_slot(config_fd, rule, &slot); rc != 0) return rc;
  if (bpf_map_lookup_elem(policy_fd, &slot, out) != 0) return -errno;
  return 0;
}

int read_live_prefix_policy(int prefix_fd, int config_fd, uint32_t rule, dt_prefix_policy *out) {
  uint32_t slot = 0;
  if (int rc = live_slot(config_fd, rule, &slot); rc != 0) return rc;
  if (bpf_map_lookup_elem(prefix_fd, &slot, out) != 0) return -errno;
  return 0;
}

}  // namespace dt
