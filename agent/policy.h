// policy.h - turning "rate R per second, burst B" into the kernel's integer policy,
// and publishing it to the policy map without a packet ever seeing half of it.
#pragma once

#include <cstdint>
#include <string>

#include "dthrottle/common.h"

namespace dt {

// Validates rate and burst and computes interval_ns = round(1e9 / rate) and
// burst_ns = burst * interval_ns. Fails (with a sentence in *err) when the values
// are out of range or the bucket would take longer than 2^62 ns to fill.
bool make_policy(double rate_per_s, uint64_t burst, dt_policy *out, std::string *err);

// The rate a policy really enforces (1e9 / interval_ns), for display.
double policy_rate(const dt_policy &p);
// Its burst in whole tokens.
unsigned long long policy_burst(const dt_policy &p);

// Publishes the complete rule set rules[0..n): fills the inactive bank of the
// policy map for every rule slot (unused slots get an empty policy), then flips the
// live bank in the config map (one aligned 32-bit store that the XDP program reads
// once per packet). Returns 0 or -errno.
int publish_policies(int policy_fd, int config_fd, const dt_policy *rules, uint32_t n);

// Reads the live policy of `rule`. Returns 0 or -errno.
int read_live_policy(int policy_fd, int config_fd, uint32_t rule, dt_policy *out);

}  // namespace dt
