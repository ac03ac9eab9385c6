// aggregate_intake.h - an agent's side of the summing hubs (`agent hub --aggregate`):
// which hub's aggregates it takes, and what of them it debits.
//
// Own hits: a hub's sums hold this agent's own reports too, and the agent already
// counted those hits when it admitted them. Each aggregate names the reports (node,
// boot, seqs) it sums (cluster_core/aggregate_protocol.h); the agent keeps what it reported
// under each of its seqs for a while (remember_own) and debits, per source and tag, the
// sum less its own hits of the seqs named. An aggregate naming one of our seqs that we
// no longer hold (older than keep_ns) is not applied at all: better to charge too
// little once than to charge our own clients twice.
//
// Two hubs, no double debit: every agent publishes to both and hears both, but takes
// aggregates from one at a time (the active hub: the first one heard). The other's
// aggregates are kept for down_after, unapplied. When the active hub has been silent for
// down_after, the agent switches to a hub still heard and first replays that hub's kept
// aggregates, so that the periods the dead hub never summed are charged. Each node's
// seqs only grow from one period's sums to the next (hub/aggregator.h); an aggregate
// naming a seq of a node (our own included) at or below the highest seq already applied
// for that node's boot, or an older boot of it than the last applied (boot counters,
// peer_protocol.h), is refused as a whole ("overlap"): a report is charged once,
// whichever hub summed it. The parts of one aggregate (hub, boot, epoch) share one
// verdict.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "cluster_core/aggregate_protocol.h"
#include "cluster_core/report_sums.h"

namespace dt {

struct AggregateCounters {
  uint64_t applied = 0;      // aggregate messages whose sums were debited
  uint64_t standby = 0;      // from a hub other than the active one (kept, not applied)
  uint64_t replayed = 0;     // of those, applied after a failover
  uint64_t overlaps = 0;     // refused: they name a report already charged
  uint64_t own_missing = 0;  // refused: they name one of our seqs no longer held
  uint64_t own_hits_subtracted = 0;
  uint64_t failovers = 0;
  std::string active_hub;  // whose aggregates are debited ("" before the first)
};

class AggregateIntake {
 public:
  AggregateIntake(uint64_t down_after_ns, uint64_t keep_ns) : down_after_ns_(down_after_ns), keep_ns_(keep_ns) {}

  void set_own(const std::string &node_id, uint64_t boot_id) { own_id_ = node_id, own_boot_ = boot_id; }
  // What this agent published under `seq` (one message's entries and tags).
  void remember_own(uint64_t seq, ReportBody body, uint64_t now_ns);

  // One aggregate message: the bodies to debit now, in order (a failover replays the new
  // hub's kept aggregates before this one), each with our own hits taken out.
  // *switched_from: set to the previous active hub ("" at the first) when this message
  // made its hub the active one.
  std::vector<ReportBody> on_message(AggregateMessage m, uint64_t now_ns, bool *switched, std::string *switched_from);

  const std::string &active_hub() const { return active_; }
  AggregateCounters counters() const {
    AggregateCounters c = counters_;
    c.active_hub = active_;
    return c;
  }
  size_t own_held() const { return own_.size(); }

 private:
  struct Kept {
    AggregateMessage msg;
    uint64_t at_ns;
  };
  struct Applied {
    uint64_t boot_id = 0;
    uint64_t max_seq = 0;
  };
  bool admit_group(const AggregateMessage &m);
  ReportBody debits_of(const AggregateMessage &m);
  void apply(AggregateMessage m, std::vector<ReportBody> *out);
  void expire(uint64_t now_ns);

  uint64_t down_after_ns_, keep_ns_;
  std::string own_id_;
  uint64_t own_boot_ = 0;
  std::map<uint64_t, std::pair<ReportBody, uint64_t>> own_;  // seq -> (what we sent, when)
  std::string active_;
  std::map<std::string, uint64_t> last_heard_;       // hub id -> when
  std::map<std::string, std::deque<Kept>> standby_;  // hub id -> its unapplied aggregates
  std::map<std::string, Applied> applied_;           // node id -> highest seq charged
  // The aggregate being applied (its parts share one verdict and one own-hits sum).
  std::string group_hub_;
  uint64_t group_boot_ = 0, group_epoch_ = 0;
  bool group_ok_ = false;
  ReportSums group_own_;
  AggregateCounters counters_;
};

}  // namespace dt
