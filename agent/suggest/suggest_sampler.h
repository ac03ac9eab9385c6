// suggest_sampler.h - what `agent suggest` measures: every second, each source bucket's
// hits (passed + dropped + would-drop, the drops still held per CPU included) read from
// the pinned buckets map, kept as a per-second series per source. No packet reaches
// userspace; the kernel's counters are read, as `agent top` reads them. Bounded: at most
// max_sources series, the rest counted as untracked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/key_hash.h"
#include "dataplane/map_reader.h"
#include "dthrottle/common.h"
#include "suggest/suggest_stats.h"

namespace dt {

// One source bucket's hits so far (its counters' sum), as one reading gives it.
struct HitReading {
  dt_key key;
  uint64_t hits = 0;
};

struct SampledSource {
  dt_key key;
  HitSeries per_s;    // hits per second of the measurement
  uint64_t last = 0;  // its hits at the latest reading
};

class HitSampler {
 public:
  explicit HitSampler(size_t max_sources) : max_sources_(max_sources) {}
  // One reading, a second after the previous one; the first is the baseline. A source
  // first seen after the baseline sent all its hits since the previous reading; a count
  // that went down (the bucket was evicted and made again) counts from zero.
  void take(const std::vector<HitReading> &reading);
  // The series, each padded to seconds() (call once the readings are done).
  const std::vector<SampledSource> &finish();
  size_t seconds() const { return ticks_ ? ticks_ - 1 : 0; }
  size_t tracked() const { return sources_.size(); }
  // The most sources one reading held beyond max_sources (0: the cap was never reached).
  uint64_t untracked() const { return untracked_; }

 private:
  void record(SampledSource *s, uint64_t hits, uint64_t delta);

  size_t max_sources_;
  size_t ticks_ = 0;
  uint64_t untracked_ = 0;
  std::vector<SampledSource> sources_;
  std::unordered_map<dt_key, size_t, KeyHash, KeyEq> index_;
};

// Every source bucket's hits (prefix buckets left out), held drops added: 0 or -errno.
int read_hits(const MapFds &maps, std::vector<HitReading> *out);

}  // namespace dt
