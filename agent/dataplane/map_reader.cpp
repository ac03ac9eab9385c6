// map_reader.cpp - userspace views of the maps.
#include "dataplane/map_reader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "dataplane/pin_layout.h"

namespace dt {

PinnedMaps::~PinnedMaps() {
  for (int fd : {buckets, stats, policy, config, rule_stats, rule_names, rule_would_drop, rule_bytes, drop_pending,
                 prefix_policy, prefix_drops, lists_v4, lists_v6, list_stats, rules0, rules1, rule_cond, capture_cpu})
    if (fd >= 0) close(fd);
}

bool PinnedMaps::open(const std::string &pin_dir, std::string *err) {
  struct {
    int *fd;
    const char *name;
  } maps[] = {{&buckets, DT_MAP_BUCKETS}, {&stats, DT_MAP_STATS}, {&policy, DT_MAP_POLICY}, {&config, DT_MAP_CONFIG}};
  for (auto &m : maps) {
    std::string path = pin_dir + "/" + m.name;
    *m.fd = bpf_obj_get(path.c_str());
    if (*m.fd < 0) {
      *err = "cannot open " + path + ": " + strerror(errno) +
             (errno == ENOENT ? " (is an agent running, or was it stopped with --keep, with this "
                                "--pin-dir?)"
                              : "");
      return false;
    }
  }
  // Pins of another layout hold values of other sizes than this build reads.
  if (const uint32_t layout = pinned_layout(pin_dir); layout != kLayoutVersion) {
    *err = "the maps pinned in " + pin_dir + " are layout " + std::to_string(layout) + ", this agent reads layout " +
           std::to_string(kLayoutVersion) + ": use the agent binary that pinned them";
    return false;
  }
  // Maps added since the first version: absent (-1) in older pins.
  struct {
    int *fd;
    const char *name;
  } optional[] = {{&rule_stats, DT_MAP_RULE_STATS},
                  {&rule_names, DT_MAP_RULE_NAMES},
                  {&rule_would_drop, DT_MAP_RULE_WOULD_DROP},
                  {&rule_bytes, DT_MAP_RULE_BYTES},
                  {&drop_pending, DT_MAP_DROP_PENDING},
                  {&prefix_policy, DT_MAP_PREFIX_POLICY},
                  {&prefix_drops, DT_MAP_PREFIX_DROPS},
                  {&lists_v4, DT_MAP_LISTS_V4},
                  {&lists_v6, DT_MAP_LISTS_V6},
                  {&list_stats, DT_MAP_LIST_STATS},
                  {&rules0, DT_MAP_RULES0},
                  {&rules1, DT_MAP_RULES1},
                  {&rule_cond, DT_MAP_RULE_COND},
                  {&capture_cpu, DT_MAP_CAPTURE_CPU}};
  for (auto &m : optional) *m.fd = bpf_obj_get((pin_dir + "/" + m.name).c_str());
  return true;
}

void add_counts(dt_stats *sum, const dt_stats &v) {
#define DT_ADD_FIELD(field, label, metric, help) sum->field += v.field;
  DT_STATS_FIELDS(DT_ADD_FIELD)
#undef DT_ADD_FIELD
}

template <class T>
int read_per_cpu(int fd, uint32_t key, std::vector<T> *out) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return ncpu ? ncpu : -EINVAL;
  out->assign(static_cast<size_t>(ncpu), T{});
  if (fd < 0) return -EBADF;
  return bpf_map_lookup_elem(fd, &key, out->data()) == 0 ? 0 : -errno;
}
// The value types of the per-CPU maps.
template int read_per_cpu(int, uint32_t, std::vector<uint64_t> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_stats> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_rule_stats> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_rule_bytes> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_drop_pending> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_active_stage> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_clock_anchor> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_list_stats> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_ban_counts> *);
template int read_per_cpu(int, uint32_t, std::vector<dt_capture_cpu> *);

int read_stats(int stats_fd, dt_stats *out) { return sum_per_cpu(stats_fd, 0, out); }

std::string read_rule_name(int names_fd, uint32_t id) {
  dt_rule_name n{};
  if (names_fd < 0 || bpf_map_lookup_elem(names_fd, &id, &n) != 0) return "";
  return std::string(n.name, strnlen(n.name, sizeof n.name));
}

RuleCounters read_rule_counters(const MapFds &m, uint32_t id) {
  RuleCounters r;
  r.id = id;
  r.name = read_rule_name(m.rule_names, id);
  dt_rule_stats packets{};
  dt_rule_bytes bytes{};
  sum_per_cpu(m.rule_stats, id, &packets);
  sum_per_cpu(m.rule_would_drop, id, &r.would_drop);
  sum_per_cpu(m.rule_bytes, id, &bytes);
  r.passed = packets.passed, r.dropped = packets.dropped;
  r.bytes_passed = bytes.passed, r.bytes_dropped = bytes.dropped;
  return r;
}

RuleCounterTable read_rule_table(const MapFds &m) {
  RuleCounterTable t;
  t.rule0 = read_rule_counters(m, DT_RULE_DEFAULT);
  for (uint32_t id = 0; id < DT_MAX_RULES; id++) {
    // An unnamed rule (not in force, or a plain --rate/--burst) still counts its would-drops.
    if (read_rule_name(m.rule_names, id).empty()) {
      uint64_t would_drop = 0;
      sum_per_cpu(m.rule_would_drop, id, &would_drop);
      t.would_drop += would_drop;
      continue;
    }
    t.named.push_back(id == DT_RULE_DEFAULT ? t.rule0 : read_rule_counters(m, id));
    t.would_drop += t.named.back().would_drop;
  }
  return t;
}

void read_prefix_drops(const MapFds &m, uint32_t id, uint64_t (&drops)[DT_PREFIX_SLOTS]) {
  for (uint32_t slot = 0; slot < DT_PREFIX_SLOTS; slot++)
    sum_per_cpu(m.prefix_drops, id * DT_PREFIX_SLOTS + slot, &drops[slot]);
}

long for_each_bucket(int fd, const std::function<void(const dt_key &, const dt_bucket &)> &fn) {
  constexpr uint32_t kBatch = 4096;
  std::vector<dt_key> keys(kBatch);
  std::vector<dt_bucket> vals(kBatch);
  dt_key out_batch{};
  void *in = nullptr;
  long seen = 0;
  for (;;) {
    uint32_t count = kBatch;
    int rc = bpf_map_lookup_batch(fd, in, &out_batch, keys.data(), vals.data(), &count, nullptr);
    int e = rc ? errno : 0;
    for (uint32_t i = 0; i < count; i++) fn(keys[i], vals[i]);
    seen += count;
    if (rc != 0) {
      if (e == ENOENT) return seen;  // end of the table
      if (e != EINVAL && e != ENOTSUP) return -e;
      break;  // no batch support: fall back to get_next_key below
    }
    in = &out_batch;
  }
  // Fallback (older kernels): one key at a time.
  dt_key key{}, next{};
  dt_bucket b{};
  const dt_key *cur = nullptr;
  seen = 0;
  while (bpf_map_get_next_key(fd, cur, &next) == 0) {
    if (bpf_map_lookup_elem(fd, &next, &b) == 0) {
      fn(next, b);
      seen++;
    }
    key = next;
    cur = &key;
  }
  return seen;
}

int PendingDrops::read(int pending_fd) {
  held_.clear();
  if (pending_fd < 0) return 0;
  std::vector<dt_drop_pending> per_cpu;
  for (uint32_t slot = 0; slot < DT_DROP_SLOTS; slot++) {
    if (int rc = read_per_cpu(pending_fd, slot, &per_cpu); rc != 0) return rc;
    for (const auto &p : per_cpu) {
      if (!p.packets) continue;  // a free slot: its key and counts mean nothing
      auto &h = held_[p.key];
      h.first += p.dropped;
      h.second += p.would_drop;
    }
  }
  return 0;
}

void PendingDrops::add_to(const dt_key &key, dt_bucket *b) const {
  auto it = held_.find(key);
  if (it == held_.end()) return;
  b->dropped += it->second.first;
  b->would_drop += it->second.second;
}

long for_each_bucket(int buckets_fd, int pending_fd, const std::function<void(const dt_key &, const dt_bucket &)> &fn) {
  std::vector<std::pair<dt_key, dt_bucket>> all;
  const long n = for_each_bucket(buckets_fd, [&](const dt_key &k, const dt_bucket &b) { all.emplace_back(k, b); });
  if (n < 0) return n;
  PendingDrops pending;
  if (int rc = pending.read(pending_fd); rc != 0) return rc;
  for (auto &[k, b] : all) {
    pending.add_to(k, &b);
    fn(k, b);
  }
  return n;
}

int read_bucket(int buckets_fd, int pending_fd, const dt_key &key, dt_bucket *out) {
  if (bpf_map_lookup_elem(buckets_fd, &key, out) != 0) return -errno;
  PendingDrops pending;
  if (int rc = pending.read(pending_fd); rc != 0) return rc;
  pending.add_to(key, out);
  return 0;
}

}  // namespace dt
