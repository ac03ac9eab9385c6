// aggregator.cpp - a summing hub's period: reports in, one sum out.
#include "hub/aggregator.h"

namespace dt {

HubRoute route_message(const void *data, size_t len) {
  if (is_aggregate_message(data, len)) return HubRoute::Drop;
  std::string node;
  uint8_t flags = 0;
  if (peek_sender(data, len, &node, &flags) != DecodeError::None || (flags & ~kFlagSigned)) return HubRoute::Relay;
  return HubRoute::Sum;
}

HubAggregator::Added HubAggregator::add(const ReportHeader &h, const ReportBody &body) {
  auto it = nodes_.find(h.node_id);
  if (it == nodes_.end()) {
    if (nodes_.size() >= max_nodes_) return Added::TooManyNodes;
    it = nodes_.emplace(h.node_id, Node{}).first;
  }
  Node &n = it->second;
  if (n.boot_id != h.boot_id) {  // a new boot (or the first): its seqs start again
    // Boots only move forward (peer_protocol.h: boot_counter): an older one is a replay.
    if (boot_counter(h.boot_id) < boot_counter(n.boot_id)) return Added::Duplicate;
    if (!n.period.empty()) return Added::Duplicate;  // two boots in one period: take the old one's first
    n.boot_id = h.boot_id;
    n.max_seq = 0;
  }
  if (h.seq <= n.max_seq) return Added::Duplicate;
  if (n.period.size() >= kMaxAggregateSeqs) return Added::TooManySeqs;
  n.max_seq = h.seq;
  n.period.push_back(h.seq);
  sums_.add(body);
  pending_++;
  return Added::Summed;
}

ReportBody HubAggregator::take(std::vector<IncludedSeqs> *included) {
  included->clear();
  for (auto &[id, n] : nodes_) {
    if (n.period.empty()) continue;
    included->push_back({id, n.boot_id, std::move(n.period)});
    n.period.clear();
  }
  pending_ = 0;
  return sums_.take();
}

std::vector<std::string> AggregateStream::period(HubAggregator &agg, uint64_t now_unix_ms, size_t max_bytes) {
  std::vector<IncludedSeqs> included;
  const ReportBody sums = agg.take(&included);
  ReportHeader h;
  h.node_id = id_;
  h.boot_id = boot_id_;
  h.epoch = ++epoch_;
  h.sent_unix_ms = now_unix_ms;
  std::vector<std::string> msgs = encode_aggregate(id_, included, h, next_seq_, sums, max_bytes);
  next_seq_ += msgs.size();
  return msgs;
}

}  // namespace dt
