// ban_sync.h - bans across the cluster (docs/bans.md "Cluster"): what this host announces
// to its peers each period, and what it does with theirs. No sockets here: the cluster
// carries the notices (cluster/peer_protocol.h, a bans message of its own).
//
//   announce  the bans set here (not learned from a peer) that are new or changed since
//             the last period, changes made by any process (agent ban, the query socket,
//             the bouncer: BanStore's generation); every one of them again every
//             kBanAnnounceEveryNs, so that peers that restart or join learn them; and the
//             bans lifted here (agent unban, not expiry), again with every full
//             announcement while their tombstone lasts (kBanTombstoneNs).
//   apply     a peer's set installs or updates the ban (origin: the peer's node id, with
//             its own origin if not "local": "h1/crowdsec"), unless it is older than a
//             lift of the same prefix (a tombstone) or than the ban held here; a lift
//             removes the ban. Bounded: at most kMaxPeerBans bans learned from peers, and
//             no ban longer than kMaxBanNs (rejections counted).
//   sweep     expired bans are removed each period (they already pass in the kernel).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bans/ban_store.h"

namespace dt {

constexpr size_t kMaxPeerBans = 16384;
constexpr uint64_t kBanAnnounceEveryNs = 10'000'000'000ull;
constexpr uint64_t kBanTombstoneNs = 60'000'000'000ull;

struct BanSyncCounters {
  uint64_t announced = 0, lifts_announced = 0;  // notices sent
  uint64_t learned = 0, updated = 0, lifted = 0;  // peers' notices applied
  uint64_t swept = 0;                             // expired bans removed
  uint64_t rejected_cap = 0, rejected_duration = 0, rejected_write = 0;
  uint64_t ignored_stale = 0;  // older than a lift or than the ban held here
};

class BanSync {
 public:
  BanSync(BanStore &store, std::string node_id) : store_(store), node_id_(std::move(node_id)) {}
  // Once a period: sweeps, then what to announce now (see the top).
  std::vector<BanNotice> on_period(uint64_t now_ns, uint64_t now_unix_ms);
  // Peer `from`'s notices.
  void apply(const std::string &from, const std::vector<BanNotice> &notices, uint64_t now_ns);
  const BanSyncCounters &counters() const { return counters_; }

 private:
  struct Known {
    uint64_t expires_ns = 0, set_unix_ms = 0;
    bool remote = false;
  };
  struct Tombstone {
    uint64_t unix_ms = 0;   // when the ban was lifted
    uint64_t until_ns = 0;  // kept (and announced) until then
  };
  void rescan(uint64_t now_ns, uint64_t now_unix_ms, bool full, std::vector<BanNotice> *out);
  void apply_set(const std::string &from, const BanNotice &n, uint64_t now_ns);
  void apply_lift(const BanNotice &n, uint64_t now_ns);
  size_t remote_count() const;

  BanStore &store_;
  std::string node_id_;
  std::map<BanPrefix, Known> known_;  // the bans as of the last scan (and our own applies)
  std::map<BanPrefix, Tombstone> tombstones_;
  uint64_t seen_generation_ = UINT64_MAX;
  uint64_t next_full_ns_ = 0;
  BanSyncCounters counters_;
};

// The notice that announces `b` at now_ns.
BanNotice set_notice(const Ban &b, uint64_t now_ns);

}  // namespace dt
