// collector.cpp - draining the active ring and running dt_collect.
#include "dataplane/collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "common/log.h"
#include "dataplane/batch_program.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"

namespace dt {
namespace {
// Longer than any one run of the XDP program: after it, no packet still holds the
// old epoch (XDP runs to completion in softirq, microseconds at most).
constexpr auto kEpochGrace = std::chrono::milliseconds(2);

// dt_collect over `keys`, DT_COLLECT_BATCH at a time: their hits (> 0, or every key with
// keep_zero) in *out. 0 or -errno.
template <class Keys>
int collect_keys(int batch_fd, int prog_fd, const Keys &keys, std::vector<ReportEntry> *out, bool keep_zero) {
  std::vector<dt_collect> batch;
  batch.reserve(DT_COLLECT_BATCH);
  auto flush = [&]() -> int {
    if (batch.empty()) return 0;
    const uint32_t count = static_cast<uint32_t>(batch.size());
    dt_debit_ctx ctx;
    if (int rc = run_batch_program(batch_fd, prog_fd, batch.data(), count, &ctx); rc != 0) return rc;
    const int n = read_batch(batch_fd, batch.data(), count);
    if (n < 0) return n;
    for (size_t i = 0; i < static_cast<size_t>(n) && i < batch.size(); i++)
      if (batch[i].hits || keep_zero) out->push_back({batch[i].key, batch[i].hits});
    batch.clear();
    return 0;
  };
  for (const dt_key &k : keys) {
    batch.push_back(dt_collect{k, 0, 0});
    if (batch.size() == DT_COLLECT_BATCH)
      if (int rc = flush(); rc != 0) return rc;
  }
  return flush();
}
}  // namespace

Collector::Collector(int config_fd, int ring_fd, int stage_fd, int batch_fd, int prog_fd)
    : config_fd_(config_fd), stage_fd_(stage_fd), batch_fd_(batch_fd), prog_fd_(prog_fd) {
  ring_ = ring_buffer__new(ring_fd, on_event, this, nullptr);
  if (!ring_) DT_ERROR("cannot open the active-source ring: %s", strerror(errno));
}

Collector::~Collector() {
  if (ring_) ring_buffer__free(ring_);
}

int Collector::set_config(uint32_t epoch, uint32_t set_flags, uint32_t clear_flags) {
  return modify_config(config_fd_, [&](dt_config &cfg) {
    cfg.epoch = epoch;
    cfg.flags = (cfg.flags | set_flags) & ~clear_flags;
  });
}

int Collector::enable(bool exempt) {
  if (!ring_) return -EINVAL;
  uint32_t zero = 0;
  dt_config cfg{};
  if (bpf_map_lookup_elem(config_fd_, &zero, &cfg) != 0) return -errno;
  epoch_ = cfg.epoch + 1;  // continue after a previous agent's epochs
  if (epoch_ == 0) epoch_ = 1;
  return set_config(epoch_, DT_CFG_REPORT | (exempt ? DT_CFG_EXEMPT : 0u), exempt ? 0u : DT_CFG_EXEMPT);
}

long Collector::adopt_unreported(int buckets_fd) {
  long queued = 0;
  const long seen = for_each_bucket(buckets_fd, [&](const dt_key &k, const dt_bucket &b) {
    if (b.passed != b.reported) queued += due_.insert(k).second;
  });
  return seen < 0 ? seen : queued;
}

void Collector::disable() { set_config(epoch_, 0, DT_CFG_REPORT | DT_CFG_EXEMPT); }

int Collector::poll_fd() const { return ring_ ? ring_buffer__epoll_fd(ring_) : -1; }

void Collector::drain() {
  if (ring_) ring_buffer__consume(ring_);
}

// Keys announced in the epoch that is starting are collected at the end of that one.
void Collector::take_keys(const dt_active_stage &s) {
  const bool next = s.epoch == epoch_ + 1;
  auto &into = next ? next_ : due_;
  for (uint32_t i = 0; i < s.count && i < DT_STAGE_KEYS; i++) {
    const bool fresh = into.insert(s.keys[i]).second;
    events_ += fresh;
    if (fresh && !next && track_fresh_) fresh_.push_back(s.keys[i]);
  }
}

int Collector::on_event(void *ctx, void *data, size_t size) {
  auto *self = static_cast<Collector *>(ctx);
  if (size < sizeof(dt_active_stage)) return 0;
  dt_active_stage s;
  memcpy(&s, data, sizeof s);
  self->take_keys(s);
  return 0;
}

// What every CPU's stage holds (keys not yet in a ring record). A stage of an older
// period that was taken before and has not changed is skipped.
int Collector::read_stages() {
  std::vector<dt_active_stage> stages;
  if (int rc = read_per_cpu(stage_fd_, 0, &stages); rc != 0) return rc;
  stage_taken_.resize(stages.size());
  for (size_t c = 0; c < stages.size(); c++) {
    const dt_active_stage &s = stages[c];
    const std::pair<uint32_t, uint32_t> seen{s.epoch, s.count};
    if (s.count == 0 || (s.epoch != epoch_ && s.epoch != epoch_ + 1 && stage_taken_[c] == seen)) continue;
    take_keys(s);
    stage_taken_[c] = seen;
  }
  return 0;
}

std::vector<ReportEntry> Collector::end_period(int *err) {
  *err = 0;
  std::vector<ReportEntry> out;
  if (!ring_) {
    *err = -EINVAL;
    return out;
  }
  // 1. New epoch: packets from now on announce themselves for the next report.
  const uint32_t ending = epoch_;
  uint32_t next = epoch_ + 1 ? epoch_ + 1 : 1;
  if (int rc = set_config(next, 0, 0); rc != 0) {
    *err = rc;
    return out;
  }
  std::this_thread::sleep_for(kEpochGrace);
  // 2. Everything announced so far (take_keys sorts by epoch): first what the CPUs
  // hold, then the ring. (A CPU that writes its stage out meanwhile has committed
  // the record before it empties the stage: whichever the reading sees, the keys
  // are in it or in the ring read after it.)
  epoch_ = ending;  // take_keys compares against epoch_ + 1 == next
  const int staged = read_stages();
  ring_buffer__consume(ring_);
  epoch_ = next;
  if (staged != 0) {
    *err = staged;
    return out;
  }
  // 3. Read passed - reported for the due sources, DT_COLLECT_BATCH at a time.
  *err = collect_keys(batch_fd_, prog_fd_, due_, &out, false);
  due_.clear();
  due_.swap(next_);
  fresh_.clear();
  if (track_fresh_) fresh_.assign(due_.begin(), due_.end());  // announced in the new period already
  return out;
}

std::vector<dt_key> Collector::take_fresh(int *err) {
  *err = ring_ ? read_stages() : -EINVAL;
  if (ring_) ring_buffer__consume(ring_);
  std::vector<dt_key> out;
  out.swap(fresh_);
  return out;
}

std::vector<ReportEntry> Collector::collect(const std::vector<dt_key> &keys, int *err) {
  std::vector<ReportEntry> out;
  *err = collect_keys(batch_fd_, prog_fd_, keys, &out, true);
  return out;
}

}  // namespace dt
