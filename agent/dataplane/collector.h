// collector.h - what this host served per source since its last report.
//
// Once per period: advance the report epoch in the config map, give packets that
// read the old epoch a moment to finish, read the sources the packet path announced
// (what each CPU's stage still holds, then the `active` ring's records: see
// bpf/announce.h), and run dt_collect over them to read passed - reported per
// source. Work per period grows with the sources active in it, not with the map.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "common/key_hash.h"
#include "common/no_copy.h"
#include "common/report_types.h"
#include "dthrottle/common.h"

struct ring_buffer;

namespace dt {

class Collector : NoCopy {
 public:
  // The maps and program it works with: config, active (ring), active_stage,
  // collect_batch, and the dt_collect program.
  Collector(int config_fd, int ring_fd, int stage_fd, int batch_fd, int prog_fd);
  ~Collector();

  // Turns announcements on (and the exempt check if `exempt`); starts the epoch.
  int enable(bool exempt);
  // Turns announcements off again (on exit, so a dead agent fills no ring).
  void disable();
  // Queues for the next report every bucket with admissions never reported (passed !=
  // reported): what a previous agent on the same pinned maps had taken from the ring
  // but not collected when it stopped. One walk of the map, at start. Returns the
  // buckets queued, or -errno.
  long adopt_unreported(int buckets_fd);

  // Ends the current period; returns the sources with their unreported hits (> 0).
  // Returns -errno in *err on a failed syscall.
  std::vector<ReportEntry> end_period(int *err);

  // Early reports (cluster_core/early_report.h): the sources announced in this period since the
  // last call (each once), reading what the CPUs' stages hold and the ring; then their
  // hits so far, collected (reported = passed: the period's end finds only later ones).
  // Only with track_fresh(true), which start at the next announcement.
  void track_fresh(bool on) { track_fresh_ = on; }
  std::vector<dt_key> take_fresh(int *err);
  std::vector<ReportEntry> collect(const std::vector<dt_key> &keys, int *err);

  // The ring's epoll fd: readable when announcements are waiting. Draining it
  // during the period (drain()) keeps the ring from filling up before end_period.
  int poll_fd() const;
  void drain();

  uint32_t epoch() const { return epoch_; }
  // Sources announced so far, each counted once per period.
  uint64_t events() const { return events_; }

 private:
  static int on_event(void *ctx, void *data, size_t size);
  void take_keys(const dt_active_stage &s);
  int read_stages();
  int set_config(uint32_t epoch, uint32_t set_flags, uint32_t clear_flags);

  int config_fd_, stage_fd_, batch_fd_, prog_fd_;
  ring_buffer *ring_ = nullptr;
  uint32_t epoch_ = 0;
  uint64_t events_ = 0;
  // Announced sources: due now (epoch <= the one ending) and early ones (next epoch).
  std::unordered_set<dt_key, KeyHash, KeyEq> due_, next_;
  bool track_fresh_ = false;
  std::vector<dt_key> fresh_;  // inserted in due_ since the last take_fresh (track_fresh_)
  // Per CPU, the (epoch, count) of an older period's stage already taken: a quiet
  // CPU's stage is read once, not every period until it announces again.
  std::vector<std::pair<uint32_t, uint32_t>> stage_taken_;
};

}  // namespace dt
