// report_cadence.cpp - see report_cadence.h.
#include "cluster_core/report_cadence.h"

#include <algorithm>

namespace dt {

void ReportCadence::queue(const std::string &to, const std::vector<ReportEntry> &entries, uint64_t now_ns) {
  if (entries.empty()) return;
  Batch &b = batches_[to];
  if (b.entries.empty()) b.since_ns = now_ns;
  b.last_ns = now_ns;
  for (const ReportEntry &e : entries) {
    if (e.hits == 0) continue;
    auto [it, fresh] = b.index.emplace(e.key, b.entries.size());
    if (fresh) {
      b.entries.push_back(e);
      b.urgent = b.urgent || e.hits >= 2;
    } else {  // served again while it waits: not a one-off, it goes now
      b.entries[it->second].hits += e.hits;
      b.urgent = true;
    }
  }
}

// Ticks are not exact: a deadline counts as reached half a period early.
bool ReportCadence::older_than(uint64_t since_ns, uint64_t span_ns, uint64_t now_ns) const {
  return now_ns + opt_.period_ns / 2 >= since_ns + span_ns;
}

bool ReportCadence::older_than_heartbeat(uint64_t since_ns, uint64_t now_ns) const {
  return older_than(since_ns, opt_.heartbeat_ns, now_ns);
}

bool ReportCadence::heard_lately(const std::string &peer, uint64_t now_ns) const {
  uint64_t last = broadcast_yet_ ? last_broadcast_ns_ : 0;
  bool any = broadcast_yet_;
  if (auto it = last_directed_ns_.find(peer); it != last_directed_ns_.end()) {
    last = std::max(last, it->second);
    any = true;
  }
  return any && !older_than_heartbeat(last, now_ns);
}

// The batches that must go: urgent, full or old ones, and with `for_liveness` also those
// whose owner would otherwise not hear from us in time.
void ReportCadence::take_due(bool for_liveness, uint64_t now_ns, PeriodPlan *p) {
  const uint64_t batch_wait = opt_.batch_wait_ns ? opt_.batch_wait_ns : opt_.heartbeat_ns;
  for (auto it = batches_.begin(); it != batches_.end();) {
    Batch &b = it->second;
    const bool go = b.urgent || b.entries.size() >= opt_.max_batch_entries ||
                    older_than(b.since_ns, batch_wait, now_ns) ||
                    (opt_.batch_quiet_ns && older_than(b.last_ns, opt_.batch_quiet_ns, now_ns)) ||
                    (for_liveness && !heard_lately(it->first, now_ns));
    if (!go || b.entries.empty()) {
      ++it;
      continue;
    }
    if (b.since_ns < now_ns) lazy_entries_ += b.entries.size();
    last_directed_ns_[it->first] = now_ns;
    p->directed.emplace_back(it->first, std::move(b.entries));
    it = batches_.erase(it);
  }
}

// The batches of owners that would not hear from us in time go unless the report has
// something to say; then a heartbeat only if some peer still would not hear from us.
PeriodPlan ReportCadence::plan(const std::vector<std::string> &peers, bool content, uint64_t now_ns) {
  PeriodPlan p;
  take_due(!content, now_ns, &p);
  bool due = content || !broadcast_yet_ || force_;
  if (!due && last_had_content_) {  // the tail
    const uint64_t tail = opt_.tail_ns ? std::min(opt_.tail_ns, opt_.heartbeat_ns) : opt_.heartbeat_ns;
    due = now_ns + opt_.period_ns / 2 >= last_broadcast_ns_ + tail;
  }
  if (!due && peers.empty()) due = older_than_heartbeat(last_broadcast_ns_, now_ns);
  for (size_t i = 0; !due && i < peers.size(); i++) due = !heard_lately(peers[i], now_ns);
  if (due) {
    p.broadcast = true;
    p.heartbeat = !content;
    sent_to_everyone(content, now_ns);
  }
  return p;
}

void ReportCadence::sent_to_everyone(bool content, uint64_t now_ns) {
  broadcast_yet_ = true;
  force_ = false;
  last_broadcast_ns_ = now_ns;
  last_had_content_ = content;
}

std::vector<ReportEntry> ReportCadence::take_all() {
  std::vector<ReportEntry> all;
  for (auto &[to, b] : batches_) all.insert(all.end(), b.entries.begin(), b.entries.end());
  batches_.clear();
  return all;
}

size_t ReportCadence::waiting() const {
  size_t n = 0;
  for (const auto &[to, b] : batches_) n += b.entries.size();
  return n;
}

}  // namespace dt
