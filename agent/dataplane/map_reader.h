// map_reader.h - reading the (pinned) maps from userspace: global counters summed
// over CPUs, the policy, and the bucket table. Needs no running agent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dthrottle/common.h"

namespace dt {

// File descriptors of the pinned maps of one pin directory.
struct PinnedMaps {
  int buckets = -1, stats = -1, policy = -1, config = -1;
  int rule_stats = -1, rule_names = -1;  // absent in pins of older versions
  int rule_would_drop = -1;               // likewise
  int prefix_policy = -1, prefix_drops = -1;  // likewise (prefix budgets)
  ~PinnedMaps();
  // Opens them; false with a sentence in *err if the directory holds no dthrottle maps.
  bool open(const std::string &pin_dir, std::string *err);
};

// Global counters summed over all possible CPUs. Returns 0 or -errno.
int read_stats(int stats_fd, dt_stats *out);

// Calls fn(key, bucket) for every bucket (batched lookups). Returns entries seen or -errno.
long for_each_bucket(int buckets_fd,
                     const std::function<void(const dt_key &, const dt_bucket &)> &fn);

}  // namespace dt
