// verified_share.h - sources verified by SYN cookies, between peers (docs/rules.md, "SYN
// cookies"): what this host tells its peers each period, and what it takes of theirs.
// Pure logic: no maps, no sockets (the cluster carries the sources in a verified sources
// message of their own, peer_protocol.h; cluster/cluster_verified.cpp reads and writes the
// maps).
//
//   outgoing  the sources the packet path verified since the last period (the records of
//             its ring: key, expiry by our monotonic clock), each once (its latest expiry),
//             those still verified now, with their remaining time; at most
//             kMaxVerifiedSharedPerPeriod a period, the rest counted (not_shared): the ring
//             holds only new ones, so a source is told once, when it is verified here.
//   incoming  a peer's message, from a peer --peer-verified lists (any other's sources are
//             refused whole: refused_peer), fresh (a stale one is the caller's to refuse): each source's
//             remaining time less the message's age (nothing left: expired_in_transit),
//             capped at our own --verified-ttl (capped), at most kMaxVerifiedLearnedPerPeriod
//             a period from all the peers together (the rest: over_budget), and at most
//             --peer-verified-max sources of one peer in force at once, all the peers
//             together at most --max-verified (a new source past either: over_peer_cap).
//             What a peer holds is kept here (key, expiry), emptied of expired sources
//             when a cap is reached: the map itself does not say who wrote a source.
//   reload    a peer --peer-verified no longer lists gives up what it holds here: those
//             of its sources no listed peer holds too are handed back, to be deleted from
//             the verified map (set_peers); so does a peer taken off the peer list
//             (forget_peers), whatever --peer-verified says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cluster_core/peer_protocol.h"
#include "common/key_hash.h"
#include "common/peer_set.h"
#include "dthrottle/verified_ring.h"

namespace dt {

constexpr size_t kMaxVerifiedSharedPerPeriod = 4096;   // sources told a period (4 messages at most)
constexpr size_t kMaxVerifiedLearnedPerPeriod = 4096;  // peers' sources written a period, in all
// --peer-verified-max's default: a quarter of --max-verified (16384 of 65536 by default).
constexpr size_t default_verified_per_peer(size_t max_verified) { return max_verified / 4 ? max_verified / 4 : 1; }

// What the packet path verified (`recs`, its ring's records, oldest first; expiries by
// CLOCK_MONOTONIC), to tell the peers at now_ns;
// *not_shared counts the sources past the period's cap.
std::vector<VerifiedSource> verified_to_share(const std::vector<dt_verified_rec> &recs, uint64_t now_ns,
                                              uint64_t *not_shared);

// One source to write into the verified map: verified for ttl_ns from now.
struct VerifiedWrite {
  dt_key key{};
  uint64_t ttl_ns = 0;
};

// A source a peer no longer listed had written, verified here until expires_ns (take()'s
// clock) by what it was told.
struct VerifiedDrop {
  dt_key key{};
  uint64_t expires_ns = 0;
};

struct VerifiedIntakeCounts {
  uint64_t expired_in_transit = 0;  // nothing left of its time once the message's age is taken off
  uint64_t capped = 0;              // longer than our --verified-ttl: cut to it
  uint64_t over_budget = 0;         // past kMaxVerifiedLearnedPerPeriod this period: not written
  uint64_t refused_peer = 0;        // sent by a peer --peer-verified does not list: not written
  uint64_t over_peer_cap = 0;       // new, its peer at --peer-verified-max or all at --max-verified
};

// How many of the peers' sources may be in force here at once.
struct VerifiedHoldLimits {
  size_t per_peer = default_verified_per_peer(DT_DEFAULT_MAX_VERIFIED);  // --peer-verified-max
  size_t all_peers = DT_DEFAULT_MAX_VERIFIED;                            // --max-verified
};

class VerifiedIntake {
 public:
  explicit VerifiedIntake(uint64_t ttl_cap_ns, size_t per_period = kMaxVerifiedLearnedPerPeriod,
                          PeerSet peers = PeerSet{}, VerifiedHoldLimits hold = VerifiedHoldLimits{})
      : ttl_cap_ns_(ttl_cap_ns), per_period_(per_period), peers_(std::move(peers)), hold_(hold) {}
  // The end of a period: the budget starts again.
  void new_period() { used_ = 0; }
  // Whether peer `node_id` may verify sources here (--peer-verified); if not, its `n`
  // sources are counted refused_peer.
  bool admits(const std::string &node_id, size_t n);
  // Which peers may verify here from now on (a reload), at now_ns (take()'s clock). The
  // peers no longer listed are forgotten; their sources still in force that no listed
  // peer holds too are returned (the caller deletes them from the verified map).
  std::vector<VerifiedDrop> set_peers(PeerSet peers, uint64_t now_ns);
  // Peers taken off the peer list (a reload), at now_ns: forgotten as set_peers forgets
  // the peers no longer listed, whatever --peer-verified says; the same sources returned.
  std::vector<VerifiedDrop> forget_peers(const std::vector<std::string> &node_ids, uint64_t now_ns);
  const PeerSet &peers() const { return peers_; }
  // Peer `node_id`'s sources, in a message `age_ms` old (peer_tracker.h), at now_ns (any
  // clock, the same at every call): what to write.
  std::vector<VerifiedWrite> take(const std::string &node_id, const std::vector<VerifiedSource> &sources,
                                  uint64_t age_ms, uint64_t now_ns);
  const VerifiedIntakeCounts &counts() const { return counts_; }
  // Sources of `node_id` (of all peers: held()) in force here by what they were told.
  size_t held_of(const std::string &node_id) const;
  size_t held() const { return held_total_; }

 private:
  uint64_t ttl_cap_ns_;
  size_t per_period_;
  size_t used_ = 0;
  using Held = std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq>;  // key -> expiry (now_ns's clock)
  struct Swept {  // the sets take() has emptied of expired sources at its now_ns
    bool mine = false, all = false;
  };
  // Whether `mine` may hold one more source (expired ones dropped first when at a cap).
  bool room_for_one(Held &mine, uint64_t now_ns, Swept *swept);
  void drop_expired(Held &h, uint64_t now_ns);
  // Forgets the peers `goes` names; their sources in force that no peer left and listed
  // holds too, once each at the latest of their expiries.
  std::vector<VerifiedDrop> withdraw_if(const std::function<bool(const std::string &)> &goes, uint64_t now_ns);
  // Whether a peer still listed holds `key` in force at now_ns.
  bool listed_holds(const dt_key &key, uint64_t now_ns) const;
  PeerSet peers_;
  VerifiedHoldLimits hold_;
  std::unordered_map<std::string, Held> held_;  // by node id; no empty one after a full sweep
  size_t held_total_ = 0;
  VerifiedIntakeCounts counts_;
};

}  // namespace dt
