// map_reader.cpp - userspace views of the maps.
#include "dataplane/map_reader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace dt {

PinnedMaps::~PinnedMaps() {
  for (int fd : {buckets, stats, policy, config, rule_stats, rule_names, rule_would_drop, drop_pending, prefix_policy,
                 prefix_drops})
    if (fd >= 0) close(fd);
}

bool PinnedMaps::open(const std::string &pin_dir, std::string *err) {
  struct { int *fd; const char *name; } maps[] = {{&buckets, DT_MAP_BUCKETS},
                                                  {&stats, DT_MAP_STATS},
                                                  {&policy, DT_MAP_POLICY},
                                                  {&config, DT_MAP_CONFIG}};
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
  rule_stats = bpf_obj_get((pin_dir + "/" + DT_MAP_RULE_STATS).c_str());
  rule_names = bpf_obj_get((pin_dir + "/" + DT_MAP_RULE_NAMES).c_str());
  rule_would_drop = bpf_obj_get((pin_dir + "/" + DT_MAP_RULE_WOULD_DROP).c_str());
  drop_pending = bpf_obj_get((pin_dir + "/" + DT_MAP_DROP_PENDING).c_str());
  prefix_policy = bpf_obj_get((pin_dir + "/" + DT_MAP_PREFIX_POLICY).c_str());
  prefix_drops = bpf_obj_get((pin_dir + "/" + DT_MAP_PREFIX_DROPS).c_str());
  return true;
}

int read_stats(int stats_fd, dt_stats *out) {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return ncpu ? ncpu : -EINVAL;
  std::vector<dt_stats> per_cpu(static_cast<size_t>(ncpu));
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(stats_fd, &zero, per_cpu.data()) != 0) return -errno;
  *out = dt_stats{};
  for (const auto &c : per_cpu) {
    out->passed += c.passed;
    out->dropped += c.dropped;
    out->new_sources += c.new_sources;
    out->parse_errors += c.parse_errors;
    out->non_ip += c.non_ip;
    out->fail_open += c.fail_open;
    out->contended += c.contended;
    out->debit_hits += c.debit_hits;
    out->nd_exempt += c.nd_exempt;
    out->exempt += c.exempt;
    out->report_overflow += c.report_overflow;
    out->allowed += c.allowed;
    out->denied += c.denied;
  }
  return 0;
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
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return ncpu ? ncpu : -EINVAL;
  std::vector<dt_drop_pending> per_cpu(static_cast<size_t>(ncpu));
  for (uint32_t slot = 0; slot < DT_DROP_SLOTS; slot++) {
    if (bpf_map_lookup_elem(pending_fd, &slot, per_cpu.data()) != 0) return -errno;
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

long for_each_bucket(int buckets_fd, int pending_fd,
                     const std::function<void(const dt_key &, const dt_bucket &)> &fn) {
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
