// cluster_counters.h - the cluster's counters, declared once: the struct, the status file
// (cluster_status.cpp: JSON and text) and /metrics (metrics/) are all made from one table
// (DT_CLUSTER_COUNTERS; the bans' is bans/ban_sync.h's DT_BAN_SYNC_COUNTERS).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bans/ban_sync.h"
#include "cluster_core/aggregate_intake.h"

namespace dt {

/*
 * The cluster's own counters, in the order they are shown:
 *   X(field, json, metric, type, line, text, help)
 *   json    its key in the status file ("agent stats --json"): in "counters", or in the
 *           object before the dot ("bans.messages_sent"); "": not in the file;
 *   metric  its Prometheus family ("": none), of `type` "counter" or "gauge";
 *   line    the line of the text view (`agent stats`) it is shown on ("": none), as
 *   text    with # for the value;
 *   help    what it counts (the metric's HELP text).
 * T(...) is the total of `rejected` (by reason), not a field: the metric is the family
 * by reason.
 */
#define DT_CLUSTER_COUNTERS(X, T) \
  X(reports_sent, "reports_sent", "dthrottle_reports_sent_total", "counter", "sent", "# reports", \
    "Period reports published.") \
  X(messages_sent, "messages_sent", "dthrottle_report_messages_sent_total", "counter", "sent", "# messages", \
    "Report messages published.") \
  X(bytes_sent, "bytes_sent", "dthrottle_report_bytes_sent_total", "counter", "sent", "# bytes", \
    "Bytes of report messages published.") \
  X(entries_sent, "entries_sent", "dthrottle_report_entries_sent_total", "counter", "sent", "# entries", \
    "Source entries published in reports.") \
  X(prefix_entries_sent, "prefix_entries_sent", "dthrottle_report_prefix_entries_sent_total", "counter", "sent", \
    "# prefix entries", "Of the entries published, prefix buckets (prefix budgets, groups RULE::pBITS).") \
  X(dest_entries_sent, "dest_entries_sent", "dthrottle_report_dest_entries_sent_total", "counter", "sent", \
    "# destination entries", \
    "Of the entries published, destination buckets (rules keyed by destination, groups RULE::dst).") \
  X(max_report_entries, "max_report_entries", "dthrottle_report_entries_max", "gauge", "sent", \
    "largest report # entries", "Entries of the largest report published since the agent started.") \
  X(collect_errors, "", "dthrottle_collect_errors_total", "counter", "sent", "# failed collections", \
    "Periods whose collection of served hits failed.") \
  X(messages_received, "messages_received", "dthrottle_report_messages_received_total", "counter", "received", \
    "# messages", "Report messages received from peers.") \
  X(bytes_received, "bytes_received", "dthrottle_report_bytes_received_total", "counter", "received", "# bytes", \
    "Bytes of report messages received.") \
  X(own_echoes, "", "", "counter", "received", "# own echoes", "Our own messages, echoed back by a hub.") \
  X(messages_applied, "messages_applied", "dthrottle_report_messages_applied_total", "counter", "received", \
    "# applied", "Received report messages applied (debited).") \
  X(entries_applied, "entries_applied", "dthrottle_report_entries_applied_total", "counter", "debited", "# entries", \
    "Report entries debited from local buckets.") \
  X(hits_debited, "hits_debited", "dthrottle_peer_hits_debited_total", "counter", "debited", "# hits", \
    "Hits served by peers and debited from local buckets.") \
  X(duplicates, "duplicates", "dthrottle_report_duplicates_total", "counter", "received", "# duplicates", \
    "Report messages ignored as duplicates or replays.") \
  X(recovered, "recovered", "dthrottle_report_recovered_messages_total", "counter", "resends", "# recovered", \
    "Report messages missing in a peer's sequence, resent on request and applied.") \
  X(resend_requests_sent, "resend_requests_sent", "dthrottle_resend_requests_sent_total", "counter", "resends", \
    "asked # times", "Requests this agent sent for messages missing from peers.") \
  X(resend_request_bytes, "", "", "counter", "resends", "# bytes asked", "Bytes of this agent's resend requests.") \
  X(resend_requests_received, "resend_requests_received", "dthrottle_resend_requests_received_total", "counter", \
    "resends", "asked of us # times", "Peers' requests for messages of this agent.") \
  X(resent_messages, "resent_messages", "dthrottle_resent_messages_total", "counter", "resends", "resent # messages", \
    "Report messages this agent published again on request.") \
  X(resent_bytes, "", "dthrottle_resent_bytes_total", "counter", "resends", "resent # bytes", \
    "Bytes of report messages published again on request.") \
  X(stale_messages, "stale_messages", "dthrottle_report_stale_messages_total", "counter", "stale", "# messages", \
    "Report messages too old to charge (--report-max-age, or a partition's backlog): not debited.") \
  X(stale_hits, "stale_hits", "dthrottle_report_stale_hits_total", "counter", "stale", "# hits not charged", \
    "Hits of stale report messages, not debited.") \
  X(debit_failures, "debit_failures", "dthrottle_debit_failures_total", "counter", "debited", "# failed", \
    "Report entries that could not be debited.") \
  T("rejected", "dthrottle_report_messages_rejected_total", "counter", "received", "# rejected", \
    "Report messages rejected as invalid (nothing debited), by reason.") \
  X(unknown_rule_entries, "unknown_rule_entries", "", "counter", "debited", "# of unknown rules", \
    "Report entries for a rule name this agent does not have.") \
  X(tags_sent, "tags_sent", "", "counter", "tags", "# sent", "Tag entries published in reports.") \
  X(tag_hits_received, "tag_hits_received", "", "counter", "tags", "# hits received", "Peers' tag hits received.") \
  X(directed_sent, "directed_sent", "", "counter", "owner", "# directed messages", \
    "Owner scheme: messages published to one owner.") \
  X(directed_bytes_sent, "directed_bytes_sent", "", "counter", "owner", "# directed bytes", \
    "Owner scheme: bytes of the messages published to one owner.") \
  X(directed_entries_sent, "directed_entries_sent", "", "counter", "owner", "# directed entries", \
    "Owner scheme: entries of the messages published to one owner.") \
  X(directed_applied, "directed_applied", "", "counter", "owner", "# directed applied", \
    "Owner scheme: messages to this agent, received and applied.") \
  X(relays_sent, "relays_sent", "", "counter", "owner", "# relays", "Owner scheme: relay messages published.") \
  X(relayed_entries_sent, "relayed_entries_sent", "", "counter", "owner", "# relayed entries", \
    "Owner scheme: entries of the relay messages published.") \
  X(relayed_hits_debited, "relayed_hits_debited", "", "counter", "owner", "# relayed hits debited", \
    "Owner scheme: hits of relayed entries debited here.") \
  X(mesh_periods, "mesh_periods", "", "counter", "owner", "# mesh periods", \
    "Owner scheme: periods sent to every peer (a peer down, or no owner ready).") \
  X(heartbeats_sent, "heartbeats_sent", "", "counter", "cadence", "# heartbeats", "Empty reports sent as heartbeats.") \
  X(quiet_periods, "quiet_periods", "", "counter", "cadence", "# quiet periods", \
    "Periods in which nothing went to everyone.") \
  X(directed_batches, "directed_batches", "", "counter", "cadence", "# directed batches", "Directed batches sent.") \
  X(lazy_entries, "lazy_entries", "", "counter", "cadence", "# lazy entries", \
    "Entries that waited in a directed batch.") \
  X(batch_waiting, "batch_waiting", "", "gauge", "cadence", "# waiting", "Entries waiting in directed batches now.") \
  X(link_drops, "link_drops", "", "counter", "links", "# peers down by link", \
    "Peers brought down by their link dropping (link liveness).") \
  X(subscribers_joined, "subscribers_joined", "", "counter", "links", "# subscribers joined", \
    "Subscribers that connected to this agent.") \
  X(link_authenticated, "link_authenticated", "dthrottle_report_messages_link_authenticated_total", "counter", \
    "links", "# messages proved by their link", \
    "Signed messages accepted without the signature's check: their CurveZMQ connection is their sender's.") \
  X(early_ticks, "early_ticks", "", "counter", "early", "# ticks", "Early report ticks that sent something.") \
  X(early_entries_sent, "early_entries_sent", "", "counter", "early", "# entries", "Entries sent early.") \
  X(shared_early_entries, "shared_early_entries", "", "counter", "early", "# shared near their limit", \
    "Of the entries sent early, shared sources near their limit.") \
  X(join_sources_emptied, "join_sources_emptied", "", "counter", "join", "# sources started empty", \
    "Joining a running cluster: sources started empty.") \
  X(join_burst_hits, "join_burst_hits", "", "counter", "join", "# burst hits", \
    "Joining a running cluster: the hits of the sources started empty.") \
  X(ban_messages_sent, "bans.messages_sent", "dthrottle_ban_messages_sent_total", "counter", "bans", \
    "# messages sent", "Bans messages published to peers.") \
  X(ban_messages_received, "bans.messages_received", "dthrottle_ban_messages_received_total", "counter", "bans", \
    "# received", "Bans messages received from peers.") \
  X(verified_messages_sent, "verified.messages_sent", "dthrottle_verified_messages_sent_total", "counter", "verified", \
    "# messages sent", "SYN cookies: verified sources messages published to peers.") \
  X(verified_shared, "verified.shared", "dthrottle_verified_sources_shared_total", "counter", "verified", \
    "# sources told", "SYN cookies: sources verified here and told to the peers.") \
  X(verified_not_shared, "verified.not_shared", "", "counter", "verified", "# not told (over the cap)", \
    "SYN cookies: sources verified here past the period's cap, not told.") \
  X(verified_messages_received, "verified.messages_received", "dthrottle_verified_messages_received_total", "counter", \
    "verified", "# received", "SYN cookies: verified sources messages received from peers.") \
  X(verified_learned, "verified.learned", "dthrottle_verified_sources_learned_total", "counter", "verified", \
    "# learned", "SYN cookies: peers' verified sources written into the verified map.") \
  X(verified_kept, "verified.kept", "", "counter", "verified", "# already verified longer", \
    "SYN cookies: peers' verified sources already verified here for longer (left as they were).") \
  X(verified_capped, "verified.capped", "", "counter", "verified", "# cut to --verified-ttl", \
    "SYN cookies: peers' verified sources whose remaining time was cut to this host's --verified-ttl.") \
  X(verified_expired, "verified.expired_in_transit", "", "counter", "verified", "# expired in transit", \
    "SYN cookies: peers' verified sources whose time ran out before their message arrived.") \
  X(verified_over_budget, "verified.over_budget", "dthrottle_verified_sources_refused_total", "counter", "verified", \
    "# over the budget", "SYN cookies: peers' verified sources past the period's budget for all peers, not written.") \
  X(verified_refused_peer, "verified.refused_peer", "dthrottle_verified_sources_refused_peer_total", "counter", \
    "verified", "# refused (--peer-verified)", \
    "SYN cookies: verified sources of peers --peer-verified does not list, not written.") \
  X(verified_refused_peer_cap, "verified.refused_peer_cap", "dthrottle_verified_sources_refused_peer_cap_total", \
    "counter", "verified", "# refused (--peer-verified-max)", \
    "SYN cookies: new verified sources of a peer at --peer-verified-max (or of all at --max-verified), not written.") \
  X(verified_write_failed, "verified.write_failed", "", "counter", "verified", "# failed writes", \
    "SYN cookies: peers' verified sources the verified map refused.") \
  X(verified_withdrawn, "verified.withdrawn", "", "counter", "verified", "# withdrawn (reload)", \
    "SYN cookies: peers' verified sources deleted when a reload took their peer off --peer-verified or the peer " \
    "list.")

struct ClusterCounters {
#define DT_CLUSTER_MEMBER(field, json, metric, type, line, text, help) uint64_t field = 0;
#define DT_CLUSTER_NO_MEMBER(json, metric, type, line, text, help)
  DT_CLUSTER_COUNTERS(DT_CLUSTER_MEMBER, DT_CLUSTER_NO_MEMBER)
#undef DT_CLUSTER_MEMBER
#undef DT_CLUSTER_NO_MEMBER
  // By decode error name, and with keys by signature check: "unsigned", "unknown_node",
  // "bad_signature", "hub_report" (cluster/report_signing.h).
  std::map<std::string, uint64_t> rejected;
  AggregateCounters aggregates;  // a summing hub's aggregates (cluster_core/aggregate_intake.h)
  BanSyncCounters bans;          // bans announced and learned (bans/ban_sync.h), as of the last period
  // What the bytes received were, by kind: "report" (hits, tags or factors), "empty" (a
  // heartbeat: nothing to say), "directed", "relay", "bans", "verified", "resend" (requests),
  // "aggregate", "rejected" (refused before its kind was known).
  std::map<std::string, uint64_t> received_bytes_by_kind, received_messages_by_kind;
  uint64_t rejected_total() const {
    uint64_t n = 0;
    for (const auto &[k, v] : rejected) n += v;
    return n;
  }
};

// One counter of the table, for the renderers.
struct ClusterCounterRow {
  const char *json, *metric, *type, *line, *text, *help;
  uint64_t ClusterCounters::*field;  // nullptr: the total of `rejected`
  uint64_t value(const ClusterCounters &c) const { return field ? c.*field : c.rejected_total(); }
};

inline constexpr ClusterCounterRow kClusterCounterRows[] = {
#define DT_CLUSTER_ROW(field, json, metric, type, line, text, help) \
  {json, metric, type, line, text, help, &ClusterCounters::field},
#define DT_CLUSTER_TOTAL_ROW(json, metric, type, line, text, help) {json, metric, type, line, text, help, nullptr},
    DT_CLUSTER_COUNTERS(DT_CLUSTER_ROW, DT_CLUSTER_TOTAL_ROW)
#undef DT_CLUSTER_ROW
#undef DT_CLUSTER_TOTAL_ROW
};

}  // namespace dt
