// ban_events.cpp - ban and unban events: told by the ban paths, or found by the scan.
#include "events/ban_events.h"

#include <vector>

#include "common/clock.h"

namespace dt {

Json ban_event_fields(const Ban &b, uint64_t now_ns, uint64_t now_unix_ms) {
  const uint64_t left_ms = b.expires_ns > now_ns ? (b.expires_ns - now_ns) / 1'000'000 : 0;
  return {{"prefix", ban_prefix_text(b.prefix)},
          {"reason", b.reason},
          {"origin", b.origin},
          {"who", b.who},
          {"remote", b.remote},
          {"set_unix_ms", b.set_unix_ms},
          {"expires_unix_ms", now_unix_ms + left_ms},
          {"duration_s", (left_ms + 999) / 1000}};
}

void BanEvents::prime(BanStore &store, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = store.generation();
  std::vector<Ban> bans;
  std::string err;
  if (!store.list(&bans, &err, false)) return;
  for (const Ban &b : bans)
    known_[b.prefix] = {b.expires_ns, b.set_unix_ms, b.origin, b.reason, b.expires_ns <= now_ns};
}

bool BanEvents::same(const Known &k, const Ban &b) const {
  return k.set_unix_ms == b.set_unix_ms && k.origin == b.origin && k.reason == b.reason;
}

void BanEvents::banned(const Ban &b, const Json &extra, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  tell_ban(b, extra, now_ns);
}

void BanEvents::installed(const Ban &b, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(b.prefix);
  if (it == known_.end() || !same(it->second, b)) tell_ban(b, Json::object(), now_ns);
}

void BanEvents::tell_ban(const Ban &b, const Json &extra, uint64_t now_ns) {
  Json fields = ban_event_fields(b, now_ns, unix_now_ms());
  for (auto it = extra.begin(); extra.is_object() && it != extra.end(); ++it) fields[it.key()] = it.value();
  known_[b.prefix] = {b.expires_ns, b.set_unix_ms, b.origin, b.reason, false};
  bus_.emit(kEventBan, fields, unix_now_ms());
}

void BanEvents::tell_unban(const BanPrefix &p, const Known &k, const char *why, uint64_t now_ns) {
  (void)now_ns;
  bus_.emit(kEventUnban, {{"prefix", ban_prefix_text(p)}, {"origin", k.origin}, {"reason", k.reason}, {"why", why}},
            unix_now_ms());
}

void BanEvents::scan(BanStore &store, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t told = 0;
  const uint64_t gen = store.generation();
  if (gen != generation_) {
    std::vector<Ban> bans;
    std::string err;
    if (!store.list(&bans, &err, false)) return;
    generation_ = gen;
    std::map<BanPrefix, Known> gone;
    gone.swap(known_);
    for (const Ban &b : bans) {
      auto it = gone.find(b.prefix);
      const bool is_new = it == gone.end() || !same(it->second, b);
      if (it != gone.end()) {
        Known &k = known_[b.prefix] = it->second;
        k.expired_told = k.expired_told && b.expires_ns <= now_ns;  // a renewed ban may expire again
        k.expires_ns = b.expires_ns;
        gone.erase(it);
      }
      if (!is_new || b.expires_ns <= now_ns) continue;
      if (told++ < kMaxBanEventsPerScan) tell_ban(b, Json::object(), now_ns);
      else suppressed_++, known_[b.prefix] = {b.expires_ns, b.set_unix_ms, b.origin, b.reason, false};
    }
    for (const auto &[prefix, k] : gone) {
      if (k.expired_told) continue;
      if (told++ < kMaxBanEventsPerScan) tell_unban(prefix, k, k.expires_ns <= now_ns ? "expired" : "lifted", now_ns);
      else suppressed_++;
    }
  }
  tell_expired(now_ns, &told);
}

// Bans past their expiry still in the store (not swept yet): "expired" once.
void BanEvents::tell_expired(uint64_t now_ns, size_t *told) {
  for (auto &[prefix, k] : known_) {
    if (k.expired_told || k.expires_ns > now_ns) continue;
    k.expired_told = true;
    if ((*told)++ < kMaxBanEventsPerScan) tell_unban(prefix, k, "expired", now_ns);
    else suppressed_++;
  }
}

uint64_t BanEvents::suppressed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return suppressed_;
}

}  // namespace dt
