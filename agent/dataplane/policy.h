// policy.h - turning "rate R per second, burst B" into the kernel's integer policy,
// and publishing it to the policy map without a packet ever seeing half of it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/list_maps.h"
#include "dthrottle/common.h"

namespace dt {

// Validates rate and burst and computes interval_ns = round(1e9 / rate) and
// burst_ns = burst * interval_ns. Fails (with a sentence in *err) when the values
// are out of range or the bucket would take longer than 2^62 ns to fill.
// With `bytes` (a byte budget, DT_POL_BYTES): rate in bytes per second, from
// kByteRateMin to kByteRateMax, kept within 1% by the whole-ns interval (see
// byte_rate_precision), and burst in bytes, at least kMinByteBurst.
bool make_policy(double rate_per_s, uint64_t burst, dt_policy *out, std::string *err, bool bytes = false);

// Byte budgets: 1 B/s to 1 GB/s (8 Gbit/s: one byte per ns, the clock's resolution).
constexpr double kByteRateMin = 1.0;
constexpr double kByteRateMax = 1e9;
// The smallest byte burst: one full-size Ethernet frame as XDP sees it (1500 bytes of
// MTU, 14 of header, 4 of a VLAN tag). A burst below a frame's length can never admit
// that frame, so a source sending full-size frames would be cut off for good.
constexpr uint64_t kMinByteBurst = 1518;
// Largest relative error of a byte rate's whole-ns interval that is accepted.
constexpr double kByteRateMaxError = 0.01;

// How far round(1e9 / rate) ns per byte is from the exact 1e9 / rate (relative).
double byte_rate_precision(double rate_per_s);

// Whether a policy counts bytes (DT_POL_BYTES).
inline bool policy_bytes(const dt_policy &p) { return (p.flags & DT_POL_BYTES) != 0; }

// The rate a policy really enforces (1e9 / interval_ns), for display.
double policy_rate(const dt_policy &p);
// Its burst in whole tokens.
unsigned long long policy_burst(const dt_policy &p);

// The maps a rule set lives in.
struct RuleMaps {
  int policy_fd = -1, config_fd = -1;
  int rules_fd[2] = {-1, -1};  // the two banks of the rules LPM trie
  int names_fd = -1;           // rule names, for bpftool and `agent stats` (optional)
  int prefix_fd = -1;          // prefix budgets by rule, banked like policy_fd (optional)
  int cond_fd = -1;            // rules' dst prefixes and len ranges, banked like policy_fd
  ListMapFds lists;            // the allow and deny lists (publish_lists, not banked)
};

// Publishes policies[0..n) and the LPM entries `lpm` atomically: fills the inactive
// bank (policy slots rule*2 + bank, and rules trie `bank`), then flips config.bank
// (one aligned store the XDP program reads once per packet) and sets DT_CFG_RULES
// when `lpm` is not empty. `prefix` holds the prefix budgets by rule id (rules past
// its end have none), written to the same bank of maps.prefix_fd; a rule's policy
// must carry DT_POL_PREFIX for the program to look at them. `cond` holds the rules'
// dst prefixes and len ranges by rule id (struct dt_rule_cond), written to the same bank
// of maps.cond_fd (-EINVAL if there is some and no map). Returns 0 or -errno.
int publish_rules(const RuleMaps &maps, const std::vector<dt_policy> &policies,
                  const std::vector<std::pair<dt_lpm_key, dt_rule_set>> &lpm, const std::vector<std::string> &names,
                  const std::vector<dt_prefix_policy> &prefix = {}, const std::vector<dt_rule_cond> &cond = {});

// The same for the policies alone, for policy changes between reloads (adaptive
// limits): the flip also switches the rules trie and the prefix budgets, so both banks must already hold the
// same entries, i.e. the last two publishes were publish_rules of the same rule set
// (or this). Returns 0 or -errno.
int publish_policies_only(const RuleMaps &maps, const std::vector<dt_policy> &policies);

// Reads the config map's one entry, lets `change` edit it, and writes it back whole: the
// one way the agent changes struct dt_config, from its main thread only (whole-struct
// writes from two threads would lose one's change). 0 or -errno.
int modify_config(int config_fd, const std::function<void(dt_config &)> &change);

// Sets and clears DT_CFG_* bits in the config map (agent thread only). 0 or -errno.
// With coarse_lag_ns (common/clock.h: coarse_clock_lag_ns), also sets the config's
// coarse_lag_ns, which lets a refusal skip the precise clock (dt_now_for_take).
int update_config_flags(int config_fd, uint32_t set, uint32_t clear, uint32_t coarse_lag_ns = 0);

// Makes `owner` (a loaded hook program's dt_instance) the owner of the frames in the config
// map (struct dt_config.owner): from then on only that program counts them. 0 or -errno.
int set_config_owner(int config_fd, uint32_t owner);

// Reads the live policy of `rule`. Returns 0 or -errno.
int read_live_policy(int policy_fd, int config_fd, uint32_t rule, dt_policy *out);
// Reads the live prefix budgets of `rule`. Returns 0 or -errno.
int read_live_prefix_policy(int prefix_fd, int config_fd, uint32_t rule, dt_prefix_policy *out);

}  // namespace dt
