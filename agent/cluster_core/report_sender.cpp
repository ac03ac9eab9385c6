// report_sender.cpp - what a node sends of the hits it served (see report_sender.h).
#include "cluster_core/report_sender.h"

#include <algorithm>

#include "cluster_core/rule_groups.h"

namespace dt {

void ReportSender::period(const ReportHeader &h, ReportBody body, bool owners, uint64_t now_ns, bool cadence) {
  Routed r = planner_.route(std::move(body.entries), owners, cadence, now_ns);
  counts_.mesh_periods += cadence && !r.owners;
  routed(h, r, body.rules, now_ns);
  body.entries = std::move(r.everyone);
  counts_.prefix_entries += name_prefix_groups(&body);
  counts_.dest_entries += name_dest_groups(&body);
  if (!cadence) return report(h, body, now_ns);
  const bool content = !body.entries.empty() || !body.tags.empty() || !body.factors.empty();
  const PeriodPlan plan = planner_.plan(content, now_ns);
  for (const auto &[to, entries] : plan.directed) {
    directed(to, h, body.rules, entries, now_ns);
    counts_.directed_batches++;
  }
  if (!plan.broadcast) {
    counts_.quiet_periods++;
    return;
  }
  counts_.heartbeats += plan.heartbeat;
  report(h, body, now_ns);
}

size_t ReportSender::early(const ReportHeader &h, ReportBody body, bool owners, uint64_t now_ns) {
  Routed r = planner_.route(std::move(body.entries), owners, false, now_ns);
  const size_t messages = r.directed.size() + !r.everyone.empty();
  routed(h, r, body.rules, now_ns);
  body.entries = std::move(r.everyone);
  if (body.entries.empty()) return messages;
  counts_.prefix_entries += name_prefix_groups(&body);
  counts_.dest_entries += name_dest_groups(&body);
  report(h, body, now_ns);
  planner_.sent_to_everyone(true, now_ns);
  return messages;
}

// What routing sends at once: entries for owners (an early tick's), an owner's relays.
void ReportSender::routed(const ReportHeader &h, Routed &r, const std::vector<std::string> &rule_names,
                          uint64_t now_ns) {
  for (const auto &[to, entries] : r.directed) directed(to, h, rule_names, entries, now_ns);
  if (!r.relays.empty()) relays(h, r.relays, planner_.router().members(), rule_names, now_ns);
}

void ReportSender::relays(const ReportHeader &h, const std::vector<RelayEntry> &relays,
                          const std::vector<std::string> &ids, const std::vector<std::string> &rule_names,
                          uint64_t now_ns) {
  for (const Outgoing &o : outbox_.relay(h, relay_blocks(relays, ids, rule_names), now_ns))
    if (publish_(o, now_ns)) planner_.sent_to_everyone(true, now_ns);
  counts_.relayed_entries += relays.size();
}

void ReportSender::directed(const std::string &to, const ReportHeader &h, const std::vector<std::string> &rule_names,
                            const std::vector<ReportEntry> &entries, uint64_t now_ns) {
  ReportBody body;
  body.rules = rule_names;
  body.entries = entries;
  name_prefix_groups(&body);
  name_dest_groups(&body);
  for (const Outgoing &o : outbox_.directed(to, h, body)) publish_(o, now_ns);
  counts_.directed_entries += entries.size();
}

// The report to everyone (in parts if large), kept for resends.
void ReportSender::report(const ReportHeader &h, ReportBody &body, uint64_t now_ns) {
  counts_.reports++;
  counts_.report_entries += body.entries.size();
  counts_.max_report_entries = std::max<uint64_t>(counts_.max_report_entries, body.entries.size());
  counts_.tags += body.tags.size();
  for (const Outgoing &o : outbox_.report(h, body, now_ns)) publish_(o, now_ns);
}

}  // namespace dt
