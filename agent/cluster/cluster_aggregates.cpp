// cluster_aggregates.cpp - Cluster's side of the summing hubs (`agent hub --aggregate`):
// aggregates checked (a role = hub key), handed to the intake (cluster_core/aggregate_intake.h:
// which hub, what of it is ours), and what is left debited like a peer's report.
#include "cluster/cluster.h"
#include "cluster_core/aggregate_protocol.h"

namespace dt {

void Cluster::handle_aggregate(const void *data, size_t len, uint64_t now_ns) {
  if (signed_) {
    const VerifyResult v = verifier_.verify_aggregate(data, len);
    if (v.check == SignatureCheck::Malformed)
      return reject(decode_error_name(v.malformed), len, "", reject_log_, now_ns);
    if (v.check != SignatureCheck::Ok) {
      const std::string detail = v.check == SignatureCheck::NotHub
                                     ? " from " + v.node_id + ": only a role = hub key may sign a hub's sums"
                                     : " (an aggregate from " + v.node_id + ")";
      return reject(signature_check_name(v.check), len, detail, auth_log_, now_ns);
    }
  }
  AggregateMessage m;
  if (const DecodeError e = decode_aggregate(data, len, &m); e != DecodeError::None)
    return reject(decode_error_name(e), len, " (an aggregate)", reject_log_, now_ns);
  const std::string hub = m.header.node_id;
  bool switched = false;
  std::string from;
  const Received r = node_.aggregate(std::move(m), now_ns, &switched, &from);  // cluster_core/cluster_node.h
  if (switched && from.empty())
    log_limited(hub_log_, LogLevel::Info, now_ns, "taking aggregates from hub %s", hub.c_str());
  else if (switched)
    log_limited(hub_log_, LogLevel::Warn, now_ns, "hub %s silent for %.1f s: taking aggregates from hub %s",
                from.c_str(), static_cast<double>(aggregate_down_after_ns(cfg_)) / 1e9, hub.c_str());
  for (const ReportBody &body : r.blocks) {
    counters_.messages_applied++;
    apply_tags(body, now_ns);
  }
  apply_charges(r, now_ns);
  counters_.aggregates = node_.intake().counters();
}

}  // namespace dt
