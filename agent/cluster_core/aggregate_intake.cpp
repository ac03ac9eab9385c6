// aggregate_intake.cpp - which hub's aggregates an agent takes, and its own hits out of them.
#include "cluster_core/aggregate_intake.h"

#include <algorithm>

namespace dt {

void AggregateIntake::remember_own(uint64_t seq, ReportBody body, uint64_t now_ns) {
  expire(now_ns);
  own_[seq] = {std::move(body), now_ns};
}

void AggregateIntake::expire(uint64_t now_ns) {
  while (!own_.empty() && own_.begin()->second.second + keep_ns_ < now_ns) own_.erase(own_.begin());
  for (auto &[hub, kept] : standby_)
    while (!kept.empty() && kept.front().at_ns + down_after_ns_ * 2 < now_ns) kept.pop_front();
}

std::vector<ReportBody> AggregateIntake::on_message(AggregateMessage m, uint64_t now_ns, bool *switched,
                                                    std::string *switched_from) {
  expire(now_ns);
  *switched = false;
  const auto active = last_heard_.find(active_);
  const bool active_silent = active == last_heard_.end() || active->second + down_after_ns_ < now_ns;
  last_heard_[m.hub_id] = now_ns;
  std::vector<ReportBody> out;
  if (m.hub_id != active_ && active_silent) {
    *switched = true;
    *switched_from = active_;
    if (!active_.empty()) counters_.failovers++;
    active_ = m.hub_id;
    auto kept = std::move(standby_[active_]);  // what the new hub summed while we listened to the old one
    standby_.erase(active_);
    for (auto &k : kept) {
      counters_.replayed++;
      apply(std::move(k.msg), &out);
    }
  }
  if (m.hub_id != active_) {
    counters_.standby++;
    standby_[m.hub_id].push_back({std::move(m), now_ns});
    return out;
  }
  apply(std::move(m), &out);
  return out;
}

void AggregateIntake::apply(AggregateMessage m, std::vector<ReportBody> *out) {
  if (m.hub_id != group_hub_ || m.header.boot_id != group_boot_ || m.header.epoch != group_epoch_) {
    group_hub_ = m.hub_id;
    group_boot_ = m.header.boot_id;
    group_epoch_ = m.header.epoch;
    group_ok_ = admit_group(m);
  }
  if (!group_ok_) return;
  counters_.applied++;
  out->push_back(debits_of(m));
}

// A new aggregate: refused if it names a report already charged (through either hub) or
// one of ours we no longer hold; else its reports are marked charged and our own hits
// in it summed, to be taken out of every part.
bool AggregateIntake::admit_group(const AggregateMessage &m) {
  group_own_ = ReportSums{};
  for (const auto &n : m.included) {
    const auto it = applied_.find(n.node_id);
    // Charged already: a seq at or below the highest of that boot, or an older boot (boots
    // only move forward: peer_protocol.h, boot_counter; a replayed one cannot reset them).
    const bool older = it != applied_.end() && boot_counter(n.boot_id) < boot_counter(it->second.boot_id);
    if (older || (it != applied_.end() && it->second.boot_id == n.boot_id && n.seqs.front() <= it->second.max_seq)) {
      counters_.overlaps++;
      return false;
    }
    if (n.node_id != own_id_) continue;
    const bool held = n.boot_id == own_boot_ &&
                      std::all_of(n.seqs.begin(), n.seqs.end(), [&](uint64_t s) { return own_.count(s) != 0; });
    if (!held) {
      counters_.own_missing++;
      return false;
    }
  }
  for (const auto &n : m.included) {
    applied_[n.node_id] = {n.boot_id, n.seqs.back()};
    if (n.node_id != own_id_) continue;
    for (uint64_t s : n.seqs) {
      group_own_.add(own_[s].first);
      own_.erase(s);
    }
  }
  return true;
}

ReportBody AggregateIntake::debits_of(const AggregateMessage &m) {
  ReportBody out;
  out.rules = m.body.rules;
  for (const auto &e : m.body.entries) {
    const uint64_t own = std::min(group_own_.hits(m.body.rules[e.key.rule], e.key), e.hits);
    counters_.own_hits_subtracted += own;
    if (e.hits > own) out.entries.push_back({e.key, e.hits - own});
  }
  for (const auto &t : m.body.tags) {
    const uint64_t own = std::min(group_own_.tag_hits(t.tag), t.hits);
    counters_.own_hits_subtracted += own;
    if (t.hits > own) out.tags.push_back({t.tag, t.hits - own});
  }
  return out;
}

}  // namespace dt
