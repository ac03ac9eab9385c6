// ban_events.h - the "ban" and "unban" events (docs/events.md) of every origin: set here by
// `agent ban`, the query socket's BAN, the CrowdSec bouncer, a peer, or automatically.
//
// banned() is the one function a ban path calls, with what only it knows (an automatic
// ban's rule and evidence, as `extra` fields); the scan of the store (each tick, when its
// generation moved) catches every ban made without it, by any process, so each ban is told
// once: a prefix's ban is told again only when it is set anew (its set time, origin or
// reason change), not when a peer's re-announcement renews it. A ban gone from the store
// before its expiry is "unban" with why "lifted"; one past its expiry, "expired". The bans
// in force when the agent starts are not told. A scan tells at most kMaxBanEventsPerScan
// changes; the rest are counted (ban_events_suppressed), not told.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "bans/ban_store.h"
#include "events/event_bus.h"

namespace dt {

inline constexpr size_t kMaxBanEventsPerScan = 256;

class BanEvents {
 public:
  explicit BanEvents(EventBus &bus) : bus_(bus) {}
  // The bans in force now: known, not told.
  void prime(BanStore &store, uint64_t now_ns);
  // Tells `b` (just set) now, with `extra` fields (an object, may be empty). Any thread.
  void banned(const Ban &b, const Json &extra, uint64_t now_ns);
  // Tells `b` (just installed from a peer) now, unless it is known as it is (a renewal).
  void installed(const Ban &b, uint64_t now_ns);
  // Compares the store with what is known; tells the differences (see the top).
  void scan(BanStore &store, uint64_t now_ns);
  uint64_t suppressed() const;

 private:
  struct Known {
    uint64_t expires_ns = 0, set_unix_ms = 0;
    std::string origin, reason;
    bool expired_told = false;
  };
  bool same(const Known &k, const Ban &b) const;
  void tell_ban(const Ban &b, const Json &extra, uint64_t now_ns);
  void tell_unban(const BanPrefix &p, const Known &k, const char *why, uint64_t now_ns);
  void tell_expired(uint64_t now_ns, size_t *told);

  EventBus &bus_;
  mutable std::mutex mu_;
  std::map<BanPrefix, Known> known_;
  uint64_t generation_ = UINT64_MAX;
  uint64_t suppressed_ = 0;
};

// The JSON fields of a "ban" event for `b` at now_ns (monotonic): prefix, reason, origin,
// who, remote, set_unix_ms, expires_unix_ms, duration_s.
Json ban_event_fields(const Ban &b, uint64_t now_ns, uint64_t now_unix_ms);

}  // namespace dt
