// report_planner.cpp - who hears of which source, and when (see report_planner.h).
#include "cluster_core/report_planner.h"

#include <algorithm>

namespace dt {

ReportPlanner::ReportPlanner(const PlannerOptions &o) : opt_(o), router_(o.router), cadence_(o.cadence) {}

bool ReportPlanner::owner_ready(std::vector<std::string> up_peers) {
  if (!opt_.owner_scheme || opt_.hubs || opt_.configured_peers == 0) return false;
  if (up_peers.size() != opt_.configured_peers) return false;
  up_peers.push_back(opt_.node_id);
  std::sort(up_peers.begin(), up_peers.end());
  if (up_peers != router_.members()) {
    const size_t self =
        static_cast<size_t>(std::find(up_peers.begin(), up_peers.end(), opt_.node_id) - up_peers.begin());
    router_.set_members(std::move(up_peers), self);
  }
  return true;
}

bool ReportPlanner::owner_ready(const std::map<std::string, PeerState> &peers) {
  if (!opt_.owner_scheme || opt_.hubs || opt_.configured_peers == 0) return false;
  std::vector<std::string> up;
  for (const auto &[id, p] : peers)
    if (p.up) up.push_back(id);
  return owner_ready(std::move(up));
}

Routed ReportPlanner::route(std::vector<ReportEntry> served, bool owners, bool period, uint64_t now_ns) {
  Routed out;
  out.owners = owners;
  if (period) owner_period_ = owners;
  if (!owners) {
    for (const ReportEntry &e : cadence_.take_all()) served.push_back(e);  // batches waiting: everyone
    for (const ReportEntry &e : served) router_.heard(e.key, now_ns);      // every peer hears them
    out.everyone = std::move(served);
    return out;
  }
  RoutedReport r = router_.route(served, now_ns);
  for (auto &[owner, entries] : r.to_owner) {
    if (period) cadence_.queue(router_.members()[owner], entries, now_ns);
    else out.directed.emplace_back(router_.members()[owner], std::move(entries));  // new sources: no waiting
  }
  out.everyone = std::move(r.everyone);
  out.relays = std::move(r.relays);
  return out;
}

// Who must hear from us: with owners, every member but us (each hears our messages to it
// alone as well as our reports); else our reports reach everyone and are all we send.
std::vector<std::string> ReportPlanner::cadence_peers() const {
  if (!owner_period_) return {};
  std::vector<std::string> peers;
  for (const std::string &id : router_.members())
    if (id != opt_.node_id) peers.push_back(id);
  return peers;
}

PeriodPlan ReportPlanner::plan(bool content, uint64_t now_ns) {
  return cadence_.plan(cadence_peers(), content, now_ns);
}

RelayPlan ReportPlanner::on_directed(const std::string &sender, const std::vector<ReportEntry> &charged,
                                     uint64_t now_ns) {
  RelayPlan p;
  const auto &members = router_.members();
  const auto it = std::find(members.begin(), members.end(), sender);
  if (it == members.end()) {  // our members are not settled yet: pass everything on at once
    p.ids = {sender};
    for (const ReportEntry &e : charged) p.relays.push_back({0, e});
    return p;
  }
  p.ids = members;
  for (const ReportEntry &e : charged)
    for (RelayEntry &r : router_.contribute(e.key, static_cast<size_t>(it - members.begin()), e.hits, now_ns))
      p.relays.push_back(std::move(r));
  return p;
}

}  // namespace dt
