// hub_core.h - a summing hub's decisions (no I/O): what each message it hears does (summed,
// relayed unchanged, dropped: route_message) and each period's aggregate (AggregateStream),
// with the counters. `agent hub --aggregate` (summing_hub.cpp: ZeroMQ, signatures) and the
// simulator's hubs (tools/sim) run this one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hub/aggregator.h"

namespace dt {

struct SummingHubCounters {
  uint64_t received = 0, summed = 0, duplicates = 0, relayed = 0, rejected = 0;
  uint64_t aggregates = 0, aggregate_messages = 0, aggregate_bytes = 0;
};

class HubCore {
 public:
  HubCore(std::string hub_id, uint64_t boot_id) : stream_(std::move(hub_id), boot_id) {}

  enum class Outcome { Summed, Duplicate, Relay, Rejected };
  // One message heard. `accepted` (if set) checks a report before it is summed (a signature;
  // it says why it refused). *why: a sentence when a report was refused for what it holds.
  Outcome on_message(const void *data, size_t len, const std::function<bool()> &accepted, std::string *why);
  // The period's sums as messages of at most max_bytes (at least one: the agents judge a
  // hub's liveness by them), counted with `extra_bytes` each (a signature added later).
  std::vector<std::string> period(uint64_t now_unix_ms, size_t max_bytes = kMaxMessageBytes, size_t extra_bytes = 0);

  const SummingHubCounters &counters() const { return counters_; }
  const std::string &hub_id() const { return stream_.hub_id(); }

 private:
  HubAggregator agg_;
  AggregateStream stream_;
  SummingHubCounters counters_;
};

}  // namespace dt
