// hub_core.cpp - a summing hub's decisions (see hub_core.h).
#include "hub/hub_core.h"

namespace dt {

HubCore::Outcome HubCore::on_message(const void *data, size_t len, const std::function<bool()> &accepted,
                                     std::string *why) {
  counters_.received++;
  const HubRoute route = route_message(data, len);
  if (route == HubRoute::Relay) {  // as a relay would: the agents check its signature end to end
    counters_.relayed++;
    return Outcome::Relay;
  }
  ReportHeader h;
  ReportBody body;
  if (route == HubRoute::Drop || (accepted && !accepted())) {
    counters_.rejected++;
    return Outcome::Rejected;
  }
  if (const DecodeError e = decode_report(data, len, &h, &body); e != DecodeError::None) {
    *why = decode_error_name(e);
    counters_.rejected++;
    return Outcome::Rejected;
  }
  switch (agg_.add(h, body)) {
    case HubAggregator::Added::Summed: counters_.summed++; return Outcome::Summed;
    case HubAggregator::Added::Duplicate: counters_.duplicates++; return Outcome::Duplicate;
    default:
      *why = "too many nodes or reports in one period";
      counters_.rejected++;
      return Outcome::Rejected;
  }
}

std::vector<std::string> HubCore::period(uint64_t now_unix_ms, size_t max_bytes, size_t extra_bytes) {
  std::vector<std::string> msgs = stream_.period(agg_, now_unix_ms, max_bytes);
  counters_.aggregates++;
  counters_.aggregate_messages += msgs.size();
  for (const std::string &m : msgs) counters_.aggregate_bytes += m.size() + extra_bytes;
  return msgs;
}

}  // namespace dt
