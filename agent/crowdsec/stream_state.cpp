// stream_state.cpp - the decision stream's state machine: bans held, startup pulls that
// reconcile, deltas, failures and their backoff.
#include "crowdsec/stream_state.h"

#include <algorithm>
#include <set>

namespace dt {
namespace {

// A ban pulled again whose expiry moved by less than this is the same ban (the LAPI counts
// its durations from its own answer; the request's own time shifts them a little).
constexpr uint64_t kSameExpiryNs = 2'000'000'000;

// The longest ban of each prefix in the batch (an address can come as an Ip and as a /32 Range).
std::map<BanPrefix, const StreamBan *> longest_per_prefix(const StreamBatch &batch) {
  std::map<BanPrefix, const StreamBan *> out;
  for (const StreamBan &ban : batch.added) {
    auto [it, inserted] = out.emplace(ban.prefix, &ban);
    if (!inserted && ban.duration_ns > it->second->duration_ns) it->second = &ban;
  }
  return out;
}

}  // namespace

void DecisionStream::adopt(const BanPrefix &prefix, uint64_t expires_ns, const std::string &reason) {
  held_[prefix] = Held{expires_ns, reason};
}

uint64_t DecisionStream::backoff_ns(unsigned failures) const {
  const uint64_t cap = std::max(timing_.max_backoff_ns, timing_.poll_ns);
  uint64_t wait = timing_.poll_ns;
  for (unsigned i = 1; i < failures && wait < cap; i++) wait *= 2;  // poll, 2 poll, 4 poll...
  return std::min(wait, cap);
}

std::vector<BanChange> DecisionStream::on_pull(const StreamBatch &batch, uint64_t now_ns) {
  std::vector<BanChange> changes = startup_next_ ? reconcile(batch, now_ns) : apply_delta(batch, now_ns);
  startup_next_ = false;
  pull_failures_ = 0;
  if (!change_failed_) change_failures_ = 0;  // the previous pull's changes were all made
  change_failed_ = false;
  next_pull_ns_ = now_ns + timing_.poll_ns;
  return changes;
}

void DecisionStream::on_failure(uint64_t now_ns) {
  pull_failures_++;
  startup_next_ = true;
  next_pull_ns_ = now_ns + backoff_ns(pull_failures_);
}

void DecisionStream::on_change_failed(const BanChange &change, uint64_t now_ns) {
  // A ban not set is not held (the startup pull sets it); a lift that failed stays held
  // (the startup pull lifts it if the LAPI still says so).
  if (change.kind == BanChange::Kind::Set) held_.erase(change.prefix);
  if (!change_failed_) change_failures_++;  // once per pull
  change_failed_ = true;
  startup_next_ = true;
  next_pull_ns_ = now_ns + backoff_ns(change_failures_);
}

void DecisionStream::expire(uint64_t now_ns) {
  std::erase_if(held_, [now_ns](const auto &entry) { return entry.second.expires_ns <= now_ns; });
}

void DecisionStream::set_ban(const StreamBan &ban, uint64_t now_ns, bool skip_unchanged,
                             std::vector<BanChange> *changes) {
  const uint64_t expires = now_ns + static_cast<uint64_t>(ban.duration_ns);
  auto it = held_.find(ban.prefix);
  if (skip_unchanged && it != held_.end() && it->second.reason == ban.reason) {
    const uint64_t was = it->second.expires_ns;
    if ((was > expires ? was - expires : expires - was) < kSameExpiryNs) return;
  }
  held_[ban.prefix] = Held{expires, ban.reason};
  changes->push_back({BanChange::Kind::Set, ban.prefix, ban.duration_ns, ban.reason});
}

// A startup pull: the whole picture. Held bans it does not list are lifted; the bans it
// lists are set unless held as they are.
std::vector<BanChange> DecisionStream::reconcile(const StreamBatch &batch, uint64_t now_ns) {
  const auto wanted = longest_per_prefix(batch);
  std::vector<BanChange> changes;
  for (auto it = held_.begin(); it != held_.end();) {
    if (wanted.count(it->first)) {
      ++it;
      continue;
    }
    changes.push_back({BanChange::Kind::Lift, it->first, 0, it->second.reason});
    it = held_.erase(it);
  }
  for (const auto &[prefix, ban] : wanted) set_ban(*ban, now_ns, true, &changes);
  return changes;
}

// A delta: lifts of the deleted decisions (unless the same response bans the prefix
// again), then the new bans.
std::vector<BanChange> DecisionStream::apply_delta(const StreamBatch &batch, uint64_t now_ns) {
  const auto wanted = longest_per_prefix(batch);
  std::vector<BanChange> changes;
  std::set<BanPrefix> lifted;
  for (const BanPrefix &prefix : batch.deleted) {
    if (wanted.count(prefix) || !lifted.insert(prefix).second) continue;
    // Lifted even when not held: another bouncer may have set it, or this one before a restart.
    auto it = held_.find(prefix);
    changes.push_back({BanChange::Kind::Lift, prefix, 0, it == held_.end() ? "" : it->second.reason});
    if (it != held_.end()) held_.erase(it);
  }
  for (const StreamBan &ban : batch.added) {
    if (wanted.at(ban.prefix) == &ban) set_ban(ban, now_ns, false, &changes);
  }
  return changes;
}

}  // namespace dt
