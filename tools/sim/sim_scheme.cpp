// sim_scheme.cpp - the simulator's reporting schemes (cluster_sim.h, docs/cluster-scale.md):
// which peers hear of which sources. Scheme::Mesh is publish_report to every peer;
// Threshold and Owner route a period's served sources here.
#include <algorithm>
#include <cstring>
#include <map>

#include "dthrottle/bucket.h"
#include "cluster_core/shared_early.h"
#include "sim/cluster_sim.h"

namespace dt::sim {
namespace {

constexpr char kDefaultRule[] = "default";  // every simulated client's rule

}  // namespace

constexpr std::pair<Scheme, const char *> kSchemeNames[] = {
    {Scheme::Mesh, "mesh"}, {Scheme::Threshold, "threshold"}, {Scheme::Owner, "owner"}, {Scheme::Hub, "hub"}};

const char *scheme_name(Scheme s) {
  for (const auto &[value, name] : kSchemeNames)
    if (value == s) return name;
  return "?";
}

bool parse_scheme(const std::string &s, Scheme *out) {
  for (const auto &[value, name] : kSchemeNames) {
    if (s == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

// Threshold: a source goes to every peer once its unreported hits reach the threshold,
// then every period while it is shared (anyone reported it lately); the rest waits.
void ClusterSim::route_threshold(size_t h, std::vector<ReportEntry> served) {
  Host &host = hosts_[h];
  std::vector<ReportEntry> everyone;
  for (const ReportEntry &e : served) {
    if (!host.planner.router().shared(e.key, now_) && e.hits < s_.threshold) continue;  // stays unreported
    host.planner.heard(e.key, now_);
    everyone.push_back(e);
  }
  mark_reported(h, everyone);
  publish_report(h, std::move(everyone), -1);
}

// Mesh and Owner: the cluster core's planner says who hears of what (report_planner.h).
// Without the cadence (every-period) the owners' batches go at once, as an early tick's.
void ClusterSim::route_served(size_t h, std::vector<ReportEntry> served) {
  Host &host = hosts_[h];
  Routed r = host.planner.route(std::move(served), owner_ready(h), s_.cadence, now_);
  std::vector<ReportEntry> everyone = std::move(r.everyone);
  r.everyone.clear();
  publish_routed(h, std::move(r));
  send_period(h, std::move(everyone));
}

// A period's or a tick's messages to one owner, and an owner's relays.
void ClusterSim::publish_routed(size_t h, Routed r) {
  for (auto &[owner, entries] : r.directed) publish_report(h, std::move(entries), static_cast<int>(std::stoul(owner.substr(1))));
  if (!r.relays.empty()) send_relays(h, r.relays, hosts_[h].planner.router().members());
}

// The end of a period (report_planner.h: plan): the batches due, then the report to
// everyone if it has something to say or a peer would not hear from us in time.
void ClusterSim::send_period(size_t h, std::vector<ReportEntry> everyone) {
  Host &host = hosts_[h];
  if (!s_.cadence) return publish_report(h, std::move(everyone), -1);
  const PeriodPlan plan = host.planner.plan(!everyone.empty() || host.adaptive, now_);
  for (const auto &[to, entries] : plan.directed)
    publish_report(h, entries, static_cast<int>(std::stoul(to.substr(1))));  // node ids are "h<index>"
  if (plan.broadcast) publish_report(h, std::move(everyone), -1);
}

// Scenario::shared_period, as the agent's early ticks (shared_early.h): between two reports,
// what host h admitted of the sources it knows to be shared and whose bucket here is below
// half the burst (near its limit: where a late report costs), routed as an early tick's.
void ClusterSim::report_shared(size_t h) {
  Host &host = hosts_[h];
  host.next_shared += s_.shared_period;
  if (!owner_ready(h)) return;
  std::vector<ReportEntry> shared;
  const BucketLookup lookup = [&](const dt_key &k, BucketView *v) {
    auto it = host.buckets.find(k);
    if (it == host.buckets.end()) return false;
    v->bucket.tat_ns = it->second.tat, v->bucket.passed = it->second.passed, v->bucket.reported = it->second.reported;
    v->policy = host.policy;
    return true;
  };
  for (const dt_key &k : select_shared_early(host.planner.router(), lookup, now_)) {
    const Bucket &b = host.buckets.find(k)->second;
    shared.push_back({k, b.passed - b.reported});
  }
  std::erase_if(shared, [](const ReportEntry &e) { return e.hits == 0; });
  if (shared.empty()) return;
  std::sort(shared.begin(), shared.end(), [](const ReportEntry &a, const ReportEntry &b) {
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  mark_reported(h, shared);
  publish_early(h, std::move(shared));
}

// An owner's relay (cluster_core/outbox.h: in its report stream), each block naming the
// member that admitted its hits.
void ClusterSim::send_relays(size_t owner, const std::vector<RelayEntry> &relays, const std::vector<std::string> &ids) {
  Host &host = hosts_[owner];
  std::map<uint32_t, std::vector<ReportEntry>> by_member;
  for (const RelayEntry &r : relays) by_member[r.from].push_back(r.entry);
  std::vector<RelayedReport> blocks;
  for (auto &[member, entries] : by_member) blocks.push_back(RelayedReport{ids[member], {kDefaultRule}, std::move(entries)});
  host_stats_[owner].relayed += relays.size();
  const std::vector<Outgoing> out = host.outbox->relay(host.outbox->header(host.epoch, wall_ms(owner)), blocks, now_);
  if (!out.empty()) host.planner.sent_to_everyone(true, now_);
  publish(owner, out);
}

// A relay: every entry is charged, but those of this host's own hits; each source is shared.
void ClusterSim::apply_relays(size_t to, const Message &m) {
  Host &host = hosts_[to];
  for (const RelayedReport &r : m.body.relayed) {
    const bool ours = r.node_id == host.node_id;
    for (const ReportEntry &e : r.entries) {
      dt_key k = e.key;
      k.rule = DT_RULE_DEFAULT;
      host.planner.heard(k, now_);
      if (!ours) debit_entry(to, k, e.hits, m);
    }
  }
}

}  // namespace dt::sim
