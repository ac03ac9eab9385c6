// stream_state.h - what the bouncer holds and when it asks the LAPI again: the state
// machine of the decision stream, apart from HTTP and from the ban maps (unit-tested).
//
// Pulls: the first is a startup pull (every active decision), the next ones deltas (what
// changed since the last pull). A failed pull (no answer, an HTTP error, a body that is no
// stream) keeps every ban in place and is retried after a backoff (the poll interval,
// doubling at each failure up to max_backoff); the first pull that works after a failure
// is a startup pull again, so that nothing missed meanwhile is lost. A startup pull is a
// whole picture: bans held that it no longer lists are lifted.
//
// Bans are keyed by prefix, never by decision: the LAPI sends one decision per value (the
// longest), and setting a prefix twice (two bouncers, or a startup pull after a delta) is
// the same ban set again.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "crowdsec/decisions.h"

namespace dt {

// One change to make to the bans.
struct BanChange {
  enum class Kind { Set, Lift } kind = Kind::Set;
  BanPrefix prefix;
  int64_t duration_ns = 0;  // Set: from now
  std::string reason;       // Set
};

struct StreamTiming {
  uint64_t poll_ns = 10'000'000'000;         // between pulls that work
  uint64_t max_backoff_ns = 60'000'000'000;  // the longest wait after failures (>= poll_ns)
};

class DecisionStream {
 public:
  explicit DecisionStream(StreamTiming timing) : timing_(timing) {}

  // Bans a previous bouncer set that are still in force (from the ban maps, at start):
  // held as if pulled, so that the first startup pull lifts those the LAPI dropped since.
  // prefix -> its expiry (mono ns).
  void adopt(const BanPrefix &prefix, uint64_t expires_ns, const std::string &reason);

  // Whether the next pull is a startup one, and when it is due (mono ns).
  bool startup_next() const { return startup_next_; }
  uint64_t next_pull_ns() const { return next_pull_ns_; }

  // A pull answered at now_ns with `batch`: the changes to make, lifts first.
  std::vector<BanChange> on_pull(const StreamBatch &batch, uint64_t now_ns);
  // A pull failed at now_ns: nothing changes; the next one is a startup pull after the backoff.
  void on_failure(uint64_t now_ns);
  // A change on_pull gave could not be made (a full ban map): the next pull is a startup
  // one, which tries again, after a backoff that grows while pulls keep failing so.
  void on_change_failed(const BanChange &change, uint64_t now_ns);

  // Bans whose time is up are forgotten (the kernel ignores them already).
  void expire(uint64_t now_ns);

  size_t held() const { return held_.size(); }
  // Failed pulls in a row (0 after one that worked).
  unsigned failures() const { return pull_failures_; }
  // The wait after `failures` failures in a row: poll_ns, doubling from the second on, up
  // to max_backoff_ns.
  uint64_t backoff_ns(unsigned failures) const;

 private:
  struct Held {
    uint64_t expires_ns = 0;
    std::string reason;
  };
  std::vector<BanChange> reconcile(const StreamBatch &batch, uint64_t now_ns);
  std::vector<BanChange> apply_delta(const StreamBatch &batch, uint64_t now_ns);
  void set_ban(const StreamBan &ban, uint64_t now_ns, bool skip_unchanged, std::vector<BanChange> *changes);

  StreamTiming timing_;
  std::map<BanPrefix, Held> held_;
  bool startup_next_ = true;
  uint64_t next_pull_ns_ = 0;     // due at once
  unsigned pull_failures_ = 0;    // pulls that failed in a row
  unsigned change_failures_ = 0;  // pulls in a row some of whose changes failed
  bool change_failed_ = false;    // since the last pull
};

}  // namespace dt
