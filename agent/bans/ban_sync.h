// ban_sync.h - bans across the cluster (docs/bans.md "Cluster"): what this host announces
// to its peers each period, and what it does with theirs. No sockets here: the cluster
// carries the notices (cluster_core/peer_protocol.h, a bans message of its own).
//
//   announce  the bans set here (not learned from a peer) that are new or changed since
//             the last period, changes made by any process (agent ban, the query socket,
//             the bouncer: BanStore's generation); every one of them again every
//             kBanAnnounceEveryNs, so that peers that restart or join learn them; and the
//             bans set here and lifted here (agent unban, not expiry), again with every
//             full announcement while their tombstone lasts (kBanTombstoneNs from the
//             lift). Only a ban's origin announces its lift: an unban here of a peer's
//             ban lifts it here only (for the rest of its life: a tombstone of it keeps
//             that peer's re-announcements out), never on the other peers.
//   apply     a peer's set, if the policy takes it (ban_policy.h: the peer may ban, the
//             prefix is narrow enough, the times credible, the peer under its caps and
//             rate; never_ban.h: it covers no peer, hub or allowed address), installs
//             the ban (origin: the peer's node id, with its own origin if not "local":
//             "h1/crowdsec") for at most the policy's max_duration, or updates that
//             peer's ban of the prefix. It is ignored when older than that peer's lift
//             of the prefix (a tombstone) or than its ban held here, and when another
//             origin's ban of the prefix is in force here (a peer never replaces nor
//             shortens this host's bans, nor another peer's). A lift is honoured only
//             from the ban's origin: it removes that peer's ban set before it, and
//             leaves a tombstone (kBanTombstoneNs from the lift's time at the origin,
//             bounded: kMaxBanTombstones, and a peer's max_per_peer). Every refusal is
//             counted, and logged at a bounded rate.
//   sweep     expired bans and tombstones are removed each period.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bans/ban_policy.h"
#include "bans/ban_store.h"
#include "bans/never_ban.h"
#include "common/log.h"

namespace dt {

constexpr size_t kMaxPeerBans = 16384;
constexpr uint64_t kBanAnnounceEveryNs = 10'000'000'000ull;
constexpr uint64_t kBanTombstoneNs = 60'000'000'000ull;
constexpr size_t kMaxBanTombstones = 16384;  // of this host's lifts, and again of the peers'

/*
 * What became of the bans announced and learned, declared once: the struct, the cluster's
 * status file ("bans" in agent stats --json, the text view's bans lines) and /metrics
 * (cluster/cluster_status.cpp, metrics/) are made from this table.
 *   X(field, name, notice, line, text, refused)
 *   name     its key in the status file's "bans", and if `notice` (a peer notice's fate)
 *            its result in dthrottle_peer_ban_notices_total{result} (docs/bans.md);
 *   line     the text view's line ("bans" or "refused"), as `text` with # for the value;
 *   refused  1: counted in refused() (a notice refused by the policy or the store).
 */
#define DT_BAN_SYNC_COUNTERS(X) \
  X(announced, "announced", 0, "bans", "# bans announced", 0) /* notices sent */ \
  X(lifts_announced, "lifts_announced", 0, "bans", "# lifts announced", 0) \
  X(learned, "learned", 1, "bans", "# learned", 0) /* peers' notices applied */ \
  X(updated, "updated", 1, "bans", "# updated", 0) \
  X(lifted, "lifted", 1, "bans", "# lifted", 0) \
  X(swept, "swept", 0, "bans", "# swept", 0)               /* expired bans removed */ \
  X(ignored_stale, "stale", 1, "bans", "# stale", 0)       /* older than a lift or than the ban held here */ \
  X(rejected_cap, "refused_cap", 1, "refused", "# cap", 1) /* kMaxPeerBans learned bans */ \
  X(rejected_duration, "refused_duration", 1, "refused", "# duration", 1) /* over 30 days */ \
  X(rejected_write, "refused_write", 1, "refused", "# write", 1) \
  X(ignored_held, "held", 1, "bans", "# held by another", 0)       /* a prefix another origin's ban holds */ \
  X(clamped, "clamped", 0, "bans", "# clamped", 0)                 /* sets longer than max_duration, cut to it */ \
  X(refused_peer, "refused_peer", 1, "refused", "# peer", 1)       /* a peer --peer-bans does not list */ \
  X(refused_prefix, "refused_prefix", 1, "refused", "# prefix", 1) /* wider than --peer-ban-min-prefix */ \
  X(refused_never_ban, "refused_never_ban", 1, "refused", "# never-ban", 1) /* a peer, hub or allowed */ \
  X(refused_peer_cap, "refused_peer_cap", 1, "refused", "# peer cap", 1)    /* at --peer-ban-max */ \
  X(refused_rate, "refused_rate", 1, "refused", "# rate", 1)                /* over the peer's --peer-ban-rate */ \
  X(refused_time, "refused_time", 1, "refused", "# time", 1)       /* set or lifted in the future or too far past */ \
  X(refused_origin, "refused_origin", 1, "refused", "# origin", 1) /* a lift of a ban the peer did not set */ \
  X(refused_tombstones, "refused_tombstone", 1, "bans", "# tombstones not kept", 0) /* no room (still applied) */ \
  X(tombstones, "tombstones", 0, "bans", "# tombstones", 0) /* held now (this host's and the peers') */

struct BanSyncCounters {
#define DT_BAN_SYNC_MEMBER(field, name, notice, line, text, refused) uint64_t field = 0;
  DT_BAN_SYNC_COUNTERS(DT_BAN_SYNC_MEMBER)
#undef DT_BAN_SYNC_MEMBER
  uint64_t refused() const {
    uint64_t n = 0;
#define DT_BAN_SYNC_REFUSED(field, name, notice, line, text, refused) n += (refused) ? field : 0;
    DT_BAN_SYNC_COUNTERS(DT_BAN_SYNC_REFUSED)
#undef DT_BAN_SYNC_REFUSED
    return n;
  }
};

// One counter of the table, for the renderers.
struct BanSyncCounterRow {
  const char *name;
  bool notice;
  const char *line, *text;
  uint64_t BanSyncCounters::*field;
};

inline constexpr BanSyncCounterRow kBanSyncCounterRows[] = {
#define DT_BAN_SYNC_ROW(field, name, notice, line, text, refused) \
  {name, notice != 0, line, text, &BanSyncCounters::field},
    DT_BAN_SYNC_COUNTERS(DT_BAN_SYNC_ROW)
#undef DT_BAN_SYNC_ROW
};

class BanSync {
 public:
  BanSync(BanStore &store, std::string node_id) : store_(store), node_id_(std::move(node_id)) {}
  void set_policy(const PeerBanPolicy &p) { policy_ = p; }
  // The never-ban set's parts (never_ban.h), whenever they change.
  void set_cluster_addresses(const std::vector<dt_exempt_key> &keys) { never_.set_cluster(keys); }
  void set_allow_list(std::shared_ptr<const ListPrefixes> allow) { never_.set_allow(std::move(allow)); }
  // Once a period: sweeps, then what to announce now (see the top).
  std::vector<BanNotice> on_period(uint64_t now_ns, uint64_t now_unix_ms);
  // Called with each peer's ban installed here (set or updated), as the store holds it.
  void set_on_installed(std::function<void(const Ban &)> f) { on_installed_ = std::move(f); }
  // Peer `from`'s notices, at now_ns (monotonic), when from's clock reads peer_now_ms.
  void apply(const std::string &from, const std::vector<BanNotice> &notices, uint64_t now_ns, uint64_t peer_now_ms);
  const BanSyncCounters &counters() const { return counters_; }

 private:
  struct Known {
    uint64_t expires_ns = 0, set_unix_ms = 0;
    bool remote = false;
    std::string node;  // remote: the peer that set it
  };
  struct Tombstone {
    uint64_t unix_ms = 0;   // when the ban was lifted (its origin's clock)
    uint64_t until_ns = 0;  // kept (and, if ours, announced) until then
  };
  using PeerKey = std::pair<BanPrefix, std::string>;  // a prefix, a peer's node id
  void rescan(uint64_t now_ns, uint64_t now_unix_ms, bool full, std::vector<BanNotice> *out);
  void on_lifted_here(const BanPrefix &prefix, const Known &k, uint64_t now_ns, uint64_t now_unix_ms,
                      std::vector<BanNotice> *out);
  void announce_tombstones(std::vector<BanNotice> *out);
  void expire_tombstones(uint64_t now_ns);
  bool admit_set(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t peer_now_ms);
  void apply_set(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t peer_now_ms);
  void apply_lift(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t peer_now_ms);
  bool keep_peer_tombstone(const PeerKey &key, const Tombstone &t);
  void install(const std::string &from, const BanNotice &n, uint64_t now_ns, uint64_t expires, bool existed);
  void refuse(uint64_t *counter, const std::string &from, const BanNotice &n, const std::string &why, uint64_t now_ns);
  void count_known();

  BanStore &store_;
  std::string node_id_;
  std::function<void(const Ban &)> on_installed_;
  PeerBanPolicy policy_;
  NeverBan never_;
  PeerBanRate rate_;
  std::map<BanPrefix, Known> known_;         // the bans as of the last scan (and our own applies)
  std::map<std::string, size_t> peer_bans_;  // known_'s remote bans by peer
  size_t remote_bans_ = 0;
  std::map<BanPrefix, Tombstone> tombstones_;     // lifts of this host's own bans: announced
  std::map<PeerKey, Tombstone> peer_tombstones_;  // the peers' lifts, and unbans here of their bans
  std::map<std::string, size_t> peer_tombstone_counts_;
  uint64_t seen_generation_ = UINT64_MAX;
  uint64_t next_full_ns_ = 0;
  BanSyncCounters counters_;
  LogLimiter refuse_log_{10'000'000'000ull, 5};
};

// The node id of the peer that set the remote ban `b` (its origin up to a '/').
std::string ban_origin_node(const Ban &b);

// The notice that announces `b` at now_ns.
BanNotice set_notice(const Ban &b, uint64_t now_ns);

}  // namespace dt
