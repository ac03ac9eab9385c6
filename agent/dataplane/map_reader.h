// map_reader.h - reading the (pinned) maps from userspace: global counters summed
// over CPUs, the policy, and the bucket table. Needs no running agent.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/key_hash.h"
#include "common/no_copy.h"
#include "dthrottle/capture.h"
#include "dthrottle/common.h"
#include "dthrottle/lists.h"

namespace dt {

// The maps the views read (agent stats, top, explain, /metrics), by fd, not owned;
// -1: absent (pins of an older version lack the maps added since).
struct MapFds {
  int buckets = -1, stats = -1, policy = -1, config = -1;
  int rule_stats = -1, rule_names = -1, rule_would_drop = -1, rule_bytes = -1;
  int drop_pending = -1;
  int prefix_policy = -1, prefix_drops = -1;
  int lists_v4 = -1, lists_v6 = -1, list_stats = -1;  // allow and deny lists (dthrottle/lists.h)
  int rules0 = -1, rules1 = -1, rule_cond = -1;       // the rules tries and the rules' dst/len conditions
  int capture_cpu = -1;                               // agent capture's per-CPU counts (dthrottle/capture.h)
};

// The same maps opened from a pin directory, and closed with it.
struct PinnedMaps : MapFds, NoCopy {
  PinnedMaps() = default;
  ~PinnedMaps();
  // Opens them; false with a sentence in *err if the directory holds no dthrottle maps,
  // or maps of another layout (dataplane/pin_layout.h) than this build reads.
  bool open(const std::string &pin_dir, std::string *err);
};

// --- per-CPU maps ---

// Adds one CPU's value into a sum (a counter struct: field by field).
inline void add_counts(uint64_t *sum, uint64_t v) { *sum += v; }
inline void add_counts(dt_rule_stats *sum, const dt_rule_stats &v) {
  sum->passed += v.passed, sum->dropped += v.dropped;
}
inline void add_counts(dt_rule_bytes *sum, const dt_rule_bytes &v) {
  sum->passed += v.passed, sum->dropped += v.dropped;
}
void add_counts(dt_stats *sum, const dt_stats &v);
inline void add_counts(dt_list_stats *sum, const dt_list_stats &v) {
  sum->allowed += v.allowed, sum->denied += v.denied, sum->would_drop += v.would_drop;
}
inline void add_counts(dt_ban_counts *sum, const dt_ban_counts &v) {
  sum->dropped += v.dropped, sum->would_drop += v.would_drop;
}
// The counters of agent capture's sampler (its rate window is per CPU: not summed).
inline void add_counts(dt_capture_cpu *sum, const dt_capture_cpu &v) {
  sum->captured += v.captured, sum->sampled_out += v.sampled_out, sum->ring_full += v.ring_full;
}

// Every possible CPU's value of element `key` of the per-CPU map `fd`: 0 or -errno
// (-EBADF for fd < 0: a map the pins lack).
template <class T>
int read_per_cpu(int fd, uint32_t key, std::vector<T> *out);

// Element `key` of the per-CPU map `fd`, summed over CPUs into *out (zero on failure):
// 0 or -errno, as read_per_cpu. The one per-CPU sum of the agent and the tests.
template <class T>
int sum_per_cpu(int fd, uint32_t key, T *out) {
  *out = T{};
  std::vector<T> per_cpu;
  if (int rc = read_per_cpu(fd, key, &per_cpu); rc != 0) return rc;
  for (const T &v : per_cpu) add_counts(out, v);
  return 0;
}

// Global counters summed over all possible CPUs. Returns 0 or -errno.
int read_stats(int stats_fd, dt_stats *out);

// --- per rule ---

// What the maps count for one rule, summed over CPUs (0 where the pins lack the map).
struct RuleCounters {
  std::string name;                              // its name in rule_names ("": none)
  uint64_t passed = 0, dropped = 0;              // rule_stats
  uint64_t would_drop = 0;                       // dry run: what enforcing would have dropped
  uint64_t bytes_passed = 0, bytes_dropped = 0;  // byte rules only (frame bytes)
  uint32_t id = 0;
};

// Rule `id`'s name in the rule_names map; "" if it has none (or names_fd < 0).
std::string read_rule_name(int names_fd, uint32_t id);

// Rule `id`'s counters, its name included.
RuleCounters read_rule_counters(const MapFds &m, uint32_t id);

// Every rule's counters as the views show them, read in one pass.
struct RuleCounterTable {
  std::vector<RuleCounters> named;  // the rules with a name (in force), by id
  RuleCounters rule0;               // rule 0 named or not (a plain --rate/--burst has no name)
  uint64_t would_drop = 0;          // every rule's would-drop, summed
};
RuleCounterTable read_rule_table(const MapFds &m);

// Packets dropped by each prefix level of rule `id` (IPv6 levels from DT_PREFIX_LEVELS),
// summed over CPUs; zeros where the pins lack the map.
void read_prefix_drops(const MapFds &m, uint32_t id, uint64_t (&drops)[DT_PREFIX_SLOTS]);

// --- buckets ---

// Calls fn(key, bucket) for every bucket (batched lookups). Returns entries seen or -errno.
// The buckets as stored: their dropped / would_drop lack the drops still held per CPU.
long for_each_bucket(int buckets_fd, const std::function<void(const dt_key &, const dt_bucket &)> &fn);

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
long for_each_bucket(int buckets_fd, int pending_fd, const std::function<void(const dt_key &, const dt_bucket &)> &fn);

// One bucket, held drops added: 0, -ENOENT (no bucket) or -errno.
int read_bucket(int buckets_fd, int pending_fd, const dt_key &key, dt_bucket *out);

}  // namespace dt
