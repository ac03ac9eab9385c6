// map_reader.h - reading the (pinned) maps from userspace: global counters summed
// over CPUs, the policy, and the bucket table. Needs no running agent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/key_hash.h"
#include "dthrottle/common.h"

namespace dt {

// File descriptors of the pinned maps of one pin directory.
struct PinnedMaps {
  int buckets = -1, stats = -1, policy = -1, config = -1;
  int rule_stats = -1, rule_names = -1;  // absent in pins of older versions
  int rule_would_drop = -1;               // likewise
  int drop_pending = -1;                  // likewise
  int prefix_policy = -1, prefix_drops = -1;  // likewise (prefix budgets)
  ~PinnedMaps();
  // Opens them; false with a sentence in *err if the directory holds no dthrottle maps.
  bool open(const std::string &pin_dir, std::string *err);
};

// Global counters summed over all possible CPUs. Returns 0 or -errno.
int read_stats(int stats_fd, dt_stats *out);

// Calls fn(key, bucket) for every bucket (batched lookups). Returns entries seen or -errno.
// The buckets as stored: their dropped / would_drop lack the drops still held per CPU.
long for_each_bucket(int buckets_fd,
                     const std::function<void(const dt_key &, const dt_bucket &)> &fn);

// The drops the packet path still holds per CPU on their way to their bucket
// (DT_MAP_DROP_PENDING, struct dt_drop_pending), by bucket key.
class PendingDrops {
 public:
  // Reads every CPU's slots: 0 or -errno. A pending_fd < 0 (pins of an older
  // version) holds nothing.
  int read(int pending_fd);
  // Adds what is held for `key` to b's dropped and would_drop.
  void add_to(const dt_key &key, dt_bucket *b) const;

 private:
  std::unordered_map<dt_key, std::pair<uint64_t, uint64_t>, KeyHash, KeyEq> held_;
};

// The buckets as users see them: for_each_bucket with the held drops added. The
// buckets are read first, then the held drops: exact when nothing is being dropped;
// during a flood a reading may lack up to DT_DROP_FLUSH_PACKETS packets of a slot
// being flushed at that moment (never counts one twice).
long for_each_bucket(int buckets_fd, int pending_fd,
                     const std::function<void(const dt_key &, const dt_bucket &)> &fn);

// One bucket, held drops added: 0, -ENOENT (no bucket) or -errno.
int read_bucket(int buckets_fd, int pending_fd, const dt_key &key, dt_bucket *out);

}  // namespace dt
