// suggest_sampler.cpp - per-second hit series from readings of the buckets map.
#include "suggest/suggest_sampler.h"

#include "dthrottle/bucket.h"

namespace dt {

void HitSampler::record(SampledSource *s, uint64_t hits, uint64_t delta) {
  s->last = hits;
  if (ticks_ == 0) return;  // the baseline: no second measured yet
  s->per_s.resize(ticks_, 0);
  s->per_s[ticks_ - 1] = static_cast<uint32_t>(delta > UINT32_MAX ? UINT32_MAX : delta);
}

void HitSampler::take(const std::vector<HitReading> &reading) {
  uint64_t left_out = 0;
  for (const HitReading &r : reading) {
    auto it = index_.find(r.key);
    if (it != index_.end()) {
      SampledSource &s = sources_[it->second];
      record(&s, r.hits, r.hits >= s.last ? r.hits - s.last : r.hits);
      continue;
    }
    if (sources_.size() >= max_sources_) {
      left_out++;
      continue;
    }
    index_.emplace(r.key, sources_.size());
    SampledSource &s = sources_.emplace_back();
    s.key = r.key;
    record(&s, r.hits, r.hits);
  }
  if (left_out > untracked_) untracked_ = left_out;
  ticks_++;
}

const std::vector<SampledSource> &HitSampler::finish() {
  for (SampledSource &s : sources_) s.per_s.resize(seconds(), 0);
  return sources_;
}

int read_hits(const MapFds &maps, std::vector<HitReading> *out) {
  out->clear();
  const long n = for_each_bucket(maps.buckets, maps.drop_pending, [out](const dt_key &k, const dt_bucket &b) {
    if (dt_key_is_prefix(k.rule)) return;  // a prefix level's bucket: its sources are read instead
    out->push_back({k, b.passed + b.dropped + b.would_drop});
  });
  return n < 0 ? static_cast<int>(n) : 0;
}

}  // namespace dt
