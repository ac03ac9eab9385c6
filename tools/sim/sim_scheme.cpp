// sim_scheme.cpp - the simulator's reporting schemes (cluster_sim.h, docs/cluster-scale.md):
// which peers hear of which sources. Scheme::Mesh is publish_report to every peer;
// Threshold and Owner route a period's served sources here.
#include <algorithm>
#include <cstring>
#include <map>

#include "dthrottle/bucket.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

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
    if (!host.router.shared(e.key, now_) && e.hits < s_.threshold) continue;  // stays unreported
    host.router.heard(e.key, now_);
    everyone.push_back(e);
  }
  mark_reported(h, everyone);
  publish_report(h, std::move(everyone), -1);
}

// Owner: the agent's ReportRouter says who hears of what (cluster_core/report_router.h).
void ClusterSim::route_served(size_t h, std::vector<ReportEntry> served) {
  Host &host = hosts_[h];
  if (!owner_ready(h)) {
    std::vector<ReportEntry> everyone = route_mesh(h, std::move(served));
    if (!s_.cadence) return publish_report(h, std::move(everyone), -1);
    for (const ReportEntry &e : host.cadence.take_all()) everyone.push_back(e);  // batches waiting: everyone
    return send_period(h, std::move(everyone));
  }
  RoutedReport r = host.router.route(served, now_);
  if (s_.cadence) {  // directed entries wait in the cadence's batches (send_period)
    for (auto &[owner, entries] : r.to_owner) host.cadence.queue(host.router.members()[owner], entries, now_);
    if (!r.relays.empty()) send_relays(h, std::move(r.relays));
    return send_period(h, std::move(r.everyone));
  }
  publish_report(h, std::move(r.everyone), -1);
  for (auto &[owner, entries] : r.to_owner) publish_report(h, std::move(entries), static_cast<int>(owner));
  if (!r.relays.empty()) send_relays(h, std::move(r.relays));
}

// As Cluster::send_period: the batches due, then the report to everyone if it has
// something to say or a peer would not hear from us in time (a heartbeat).
void ClusterSim::send_period(size_t h, std::vector<ReportEntry> everyone) {
  Host &host = hosts_[h];
  if (!s_.cadence) return publish_report(h, std::move(everyone), -1);
  std::vector<std::string> peers;
  if (s_.scheme == Scheme::Owner)
    for (const std::string &id : host.router.members())
      if (id != host.node_id) peers.push_back(id);
  const bool content = !everyone.empty() || host.adaptive;
  const PeriodPlan plan = host.cadence.plan(peers, content, now_);
  for (const auto &[to, entries] : plan.directed)
    publish_report(h, entries, static_cast<int>(std::stoul(to.substr(1))));  // node ids are "h<index>"
  if (plan.broadcast) publish_report(h, std::move(everyone), -1);
}

// Scenario::shared_period, as the agent's early ticks (cluster_early.cpp): between two
// reports, what host h admitted of the sources it knows to be shared and whose bucket here
// is below half the burst (near its limit: where a late report costs) goes to every peer at
// once (nothing is sent if there is none).
void ClusterSim::report_shared(size_t h) {
  Host &host = hosts_[h];
  host.next_shared += s_.shared_period;
  std::vector<ReportEntry> shared;
  // As the agent (cluster_core/shared_early.h): shared, unreported hits, below half the burst.
  const BucketLookup lookup = [&](const dt_key &k, BucketView *v) {
    auto it = host.buckets.find(k);
    if (it == host.buckets.end()) return false;
    v->bucket.tat_ns = it->second.tat, v->bucket.passed = it->second.passed, v->bucket.reported = it->second.reported;
    v->policy = host.policy;
    return true;
  };
  for (const dt_key &k : select_shared_early(host.router, lookup, now_)) {
    const Bucket &b = host.buckets.find(k)->second;
    shared.push_back({k, b.passed - b.reported});
  }
  if (shared.empty()) return;
  std::sort(shared.begin(), shared.end(), [](const ReportEntry &a, const ReportEntry &b) {
    return memcmp(a.key.addr, b.key.addr, sizeof a.key.addr) < 0;
  });
  mark_reported(h, shared);
  for (const ReportEntry &e : shared) host.router.heard(e.key, now_);
  publish_report(h, std::move(shared), -1);
}

// The relay message's size on the wire (docs/cluster-scale.md "Relay section"): a report
// header, then per host named: u8 id length | id | varint n | n x (address, varint hits).
size_t relay_wire_bytes(const std::vector<std::string> &ids, const std::map<uint32_t, std::vector<uint64_t>> &by_host,
                        size_t header_bytes) {
  auto varint = [](uint64_t v) {
    size_t n = 1;
    while (v >= 128) v >>= 7, n++;
    return n;
  };
  size_t bytes = header_bytes + varint(by_host.size());
  for (const auto &[from, hits] : by_host) {
    bytes += 1 + ids[from].size() + varint(hits.size());
    for (uint64_t h : hits) bytes += 4 + varint(h);  // the simulator's clients are IPv4
  }
  return bytes;
}

void ClusterSim::send_relays(size_t owner, std::vector<RelayEntry> relays) {
  auto m = std::make_shared<Message>();
  m->from = owner;
  m->hdr.node_id = hosts_[owner].node_id;
  m->hdr.epoch = hosts_[owner].epoch;  // as the agent's relay: the owner's period
  std::map<uint32_t, std::vector<uint64_t>> by_host;
  for (const RelayEntry &r : relays) by_host[r.from].push_back(r.entry.hits);
  std::vector<std::string> ids;
  for (const Host &h : hosts_) ids.push_back(h.node_id);
  // The header: magic, version, flags, id length, id, boot, seq, epoch, time, part, parts.
  m->relay_size = relay_wire_bytes(ids, by_host, 4 + 3 + hosts_[owner].node_id.size() + 32 + 4);
  host_stats_[owner].relayed += relays.size();
  hosts_[owner].cadence.sent_to_everyone(true, now_);
  m->relay = std::move(relays);
  broadcast(owner, m);
}

// A relay: every entry is charged, but those of this host's own hits; each source is shared.
void ClusterSim::apply_relays(size_t to, const Message &m) {
  Host &host = hosts_[to];
  join_heard(to, m);
  for (const RelayEntry &r : m.relay) {
    host.router.heard(r.entry.key, now_);
    if (r.from != to) debit_entry(to, r.entry.key, r.entry.hits, m);
  }
}

}  // namespace dt::sim
