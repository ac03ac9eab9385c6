// join_guard.h - a host joining a running cluster starts the sources its peers report
// empty, not full (docs/cluster-scale.md "A node joining a running cluster"). Pure logic on
// the caller's clock: the agent's Cluster and the simulator run the same code.
//
// Why: reports carry hits, not balances. A joiner's bucket for a source the cluster is
// throttling starts full: it admits a burst more than the cluster's budget, and as long as
// the source stays throttled its view stays a burst above its peers', so it takes their
// share (measured in the simulator: the cluster over-admits up to one burst, the joiner
// serves nearly all of the source). With the guard, for `window_ns` after it learns that
// it joined a running cluster, the first peer debit of each source carries one burst more:
// its bucket starts empty there, as the cluster's is. A source no peer reports (a client
// that only this host serves) is never charged: it keeps its whole burst.
//
// Joining, not starting together: the first report heard from a peer names a period (its
// epoch) of at least running_epoch: the peer has been counting periods for a while. Agents
// that start at the same time hear small epochs and start full, as before. Not the seq:
// with link liveness an idle peer sends a message every 20 s, so its seq says little of
// how long it has run.
//
// In flight at the join, not new since: only a source a peer reports for a period that was
// running when we first heard that peer (its epoch then, plus in_flight_periods) can be one
// the cluster was throttling before we came. A source first reported in a later period
// appeared after we joined: it is as new to the cluster as to us, its buckets are full
// everywhere, and emptying it here would take a burst from a client that did nothing (an
// agent that starts a few seconds after its peers hears a running cluster: a client that
// first comes within its window must still get its burst).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/key_hash.h"
#include "dthrottle/common.h"

namespace dt {

struct JoinGuardOptions {
  uint64_t window_ns = 2'000'000'000ull;  // the report max age
  uint64_t running_epoch = 10;            // a peer's period number that shows a running cluster
  uint64_t in_flight_periods = 1;         // periods after a peer's first one still in flight
};

class JoinGuard {
 public:
  explicit JoinGuard(const JoinGuardOptions &o = {}) : opt_(o) {}
  // Every accepted message of a peer, with the period it names: the first of any peer
  // decides whether we joined a running cluster; the first of each peer names the period
  // that was running when we first heard it. Later calls for a peer change nothing.
  void heard(const std::string &peer, uint64_t peer_epoch, uint64_t now_ns);
  bool active(uint64_t now_ns) const { return now_ns < until_ns_; }
  bool joined() const { return until_ns_ != 0; }
  // The hits to add to a debit of k from `peer`'s message of period `peer_epoch`:
  // burst_hits the first time while active, for a period in flight when we first heard
  // that peer; else 0.
  uint64_t extra(const std::string &peer, uint64_t peer_epoch, const dt_key &k, uint64_t burst_hits, uint64_t now_ns);
  uint64_t charged() const { return charged_count_; }

 private:
  bool in_flight(const std::string &peer, uint64_t peer_epoch) const;
  void forget();

  JoinGuardOptions opt_;
  bool decided_ = false;
  uint64_t until_ns_ = 0;
  std::unordered_map<std::string, uint64_t> first_epoch_;  // per peer; members only, kept for the window
  std::unordered_set<dt_key, KeyHash, KeyEq> seen_;        // sources whose first debit came
  uint64_t charged_count_ = 0;
};

// Per rule index, the burst in hits (burst_ns / interval_ns; 0 for a rule without a rate).
std::vector<uint64_t> rule_burst_hits(const std::vector<dt_policy> &policies);

}  // namespace dt
