// aggregator.h - what a summing hub (`agent hub --aggregate`) adds up each period: the
// hits of every report it received, per rule name, source and tag, and which reports
// (node, boot, seq) those were; at the end of the period one aggregate goes to every
// agent (cluster_core/aggregate_protocol.h) instead of every report to every agent.
//
// A report is summed once: a seq of a node's boot already summed (a resend, a replay)
// is refused as a duplicate, and so is a report of an older boot than the node's last
// (boots compare by their counters, peer_protocol.h: a replayed old boot cannot reset
// the node's seqs). Seqs of a node are expected in order (one TCP connection
// per agent); a seq below the highest summed one is refused too, since the agents'
// failover rule (cluster_core/aggregate_intake.h) counts on each node's seqs only growing
// from one aggregate to the next.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster_core/aggregate_protocol.h"
#include "cluster_core/report_sums.h"

namespace dt {

// What a summing hub does with a message: sum it (a plain report: no flag but "signed"),
// relay it unchanged (resend requests, adaptive factors, bans, any flag or message type it
// does not know: never summed, never altered), or drop it (an aggregate: only hubs send
// those).
enum class HubRoute { Sum, Relay, Drop };
HubRoute route_message(const void *data, size_t len);

class HubAggregator {
 public:
  explicit HubAggregator(size_t max_nodes = kMaxAggregateNodes) : max_nodes_(max_nodes) {}

  enum class Added { Summed, Duplicate, TooManyNodes, TooManySeqs };
  // Adds one decoded report (not a resend request: the caller relays those).
  Added add(const ReportHeader &h, const ReportBody &body);
  // This period's sums and the reports they hold; empty again afterwards.
  ReportBody take(std::vector<IncludedSeqs> *included);
  size_t pending_reports() const { return pending_; }
  size_t nodes() const { return nodes_.size(); }

 private:
  struct Node {
    uint64_t boot_id = 0;
    uint64_t max_seq = 0;          // of this boot, summed so far
    std::vector<uint64_t> period;  // seqs summed this period, ascending
  };
  size_t max_nodes_;
  std::map<std::string, Node> nodes_;
  ReportSums sums_;
  size_t pending_ = 0;
};

// A summing hub's stream of aggregates: its node id and boot, the period (epoch) each
// aggregate names and the seq of its next message. The agent's hub (summing_hub.cpp) and the
// simulator (tools/sim) send their periods through this one.
class AggregateStream {
 public:
  AggregateStream() = default;
  AggregateStream(std::string hub_id, uint64_t boot_id) : id_(std::move(hub_id)), boot_id_(boot_id) {}

  // The period's sums (`agg` emptied) as messages of at most max_bytes each, sent at
  // now_unix_ms; at least one, even with nothing summed: the agents judge a hub's liveness by
  // them.
  std::vector<std::string> period(HubAggregator &agg, uint64_t now_unix_ms, size_t max_bytes = kMaxMessageBytes);
  const std::string &hub_id() const { return id_; }

 private:
  std::string id_;
  uint64_t boot_id_ = 0, epoch_ = 0, next_seq_ = 1;
};

}  // namespace dt
