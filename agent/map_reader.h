// map_reader.h - reading the (pinned) maps from userspace: global counters summed
// over CPUs, the policy, and the bucket table. Needs no running agent.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "dthrottle/common.h"

namespace dt {

// File descriptors of the pinned maps of one pin directory.
struct PinnedMaps {
  int buckets = -1, stats = -1, policy = -1, config = -1;
  int rule_stats = -1, rule_names = -1;  // absent in pins of older versions
  ~PinnedMaps();
  // Opens them; false with a sentence in *err if the directory holds no dthrottle maps.
  bool open(const std::string &pin_dir, std::string *err);
};

// Global counters summed over all possible CPUs. Returns 0 or -errno.
int read_stats(int stats_fd, dt_stats *out);

// Calls fn(key, bucket) for every bucket (batched lookups). Returns entries seen or -errno.
long for_each_bucket(int buckets_fd,
                     const std::function<void(const dt_key &, const dt_bucket &)> &fn);

// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads.
uint64_t mono_now_ns();

// The first 12 bytes of an IPv4-mapped IPv6 address (::ffff:a.b.c.d): how keys,
// reports and rules hold IPv4 addresses.
inline constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
// True if the 16-byte address is an IPv4 address in that form.
inline bool addr_is_v4(const uint8_t *addr) { return memcmp(addr, kV4MappedPrefix, sizeof kV4MappedPrefix) == 0; }

// "198.18.0.1" for IPv4-mapped keys, RFC 5952 text for IPv6.
std::string key_to_string(const dt_key &k);
// Parses an IPv4 or IPv6 address into a key; false if it is neither.
bool key_from_string(const std::string &s, dt_key *out);

}  // namespace dt
