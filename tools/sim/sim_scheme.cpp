// sim_scheme.cpp - the simulator's reporting schemes (cluster_sim.h, docs/cluster-scale.md):
// which peers hear of which sources. Scheme::Mesh is publish_report to every peer;
// Threshold and Owner route a period's served sources here.
#include <algorithm>
#include <map>

#include "cluster/source_owner.h"
#include "sim/cluster_sim.h"

namespace dt::sim {

constexpr std::pair<Scheme, const char *> kSchemeNames[] = {
    {Scheme::Mesh, "mesh"}, {Scheme::Threshold, "threshold"}, {Scheme::Owner, "owner"}};

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

bool ClusterSim::is_hot(const Host &host, const dt_key &k) const {
  auto it = host.hot_until.find(k);
  return it != host.hot_until.end() && it->second > now_;
}

// Rendezvous hashing over every host's node id (cluster/source_owner.h, as the agent).
size_t ClusterSim::owner_of(const dt_key &k) {
  auto [it, fresh] = owner_cache_.emplace(k, 0);
  if (fresh) {
    std::vector<std::string> ids;
    ids.reserve(hosts_.size());
    for (const Host &h : hosts_) ids.push_back(h.node_id);
    it->second = static_cast<uint32_t>(source_owner(ids, k));
  }
  return it->second;
}

// Threshold and Owner: which of host h's served sources go to every peer, which to
// their owner, and which stay unreported for now (Threshold's light ones).
void ClusterSim::route_served(size_t h, std::vector<ReportEntry> served) {
  Host &host = hosts_[h];
  const Ns hot_until = now_ + kHotPeriods * s_.period;
  std::vector<ReportEntry> everyone;
  std::map<size_t, std::vector<ReportEntry>> to_owner;
  std::vector<Relay> relays;
  for (const ReportEntry &e : served) {
    const bool hot = is_hot(host, e.key);
    if (s_.scheme == Scheme::Threshold) {
      if (!hot && e.hits < s_.threshold) continue;  // stays unreported
    } else if (!hot) {
      const size_t owner = owner_of(e.key);
      if (owner != h) {
        to_owner[owner].push_back(e);
        continue;
      }
      Bucket &b = host.buckets[e.key];  // we own it: noted here, relayed once shared
      b.reported += e.hits;
      host_stats_[h].hits_reported += e.hits;
      contribute(h, e.key, h, e.hits, &relays);
      continue;
    }
    host.hot_until[e.key] = hot_until;
    everyone.push_back(e);
  }
  publish_report(h, std::move(everyone), -1);
  for (auto &[owner, entries] : to_owner) publish_report(h, std::move(entries), static_cast<int>(owner));
  if (!relays.empty()) send_relays(h, std::move(relays));
}

// An owner notes `hits` of k that host `from` admitted (already charged here). A shared
// source's hits are relayed at once; else they wait, until a second host reports k
// within the report max age: then everything waiting is relayed and k is shared.
void ClusterSim::contribute(size_t owner, const dt_key &k, size_t from, uint64_t hits, std::vector<Relay> *relays) {
  Host &o = hosts_[owner];
  if (is_hot(o, k)) {
    relays->push_back({static_cast<uint32_t>(from), k, hits});
    return;
  }
  const Ns max_age = s_.report_max_age && s_.report_max_age != kNever ? s_.report_max_age
                                                                        : kReportMaxAgePeriods * s_.period;
  auto &waiting = o.pending[k];
  std::erase_if(waiting, [&](const Contribution &c) { return c.at + max_age < now_; });
  waiting.push_back({static_cast<uint32_t>(from), hits, now_});
  const bool shared = std::any_of(waiting.begin(), waiting.end(), [&](const Contribution &c) { return c.from != from; });
  if (!shared) return;
  o.hot_until[k] = now_ + kHotPeriods * s_.period;
  for (const Contribution &c : waiting) relays->push_back({c.from, k, c.hits});
  o.pending.erase(k);
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

void ClusterSim::send_relays(size_t owner, std::vector<Relay> relays) {
  auto m = std::make_shared<Message>();
  m->from = owner;
  std::map<uint32_t, std::vector<uint64_t>> by_host;
  for (const Relay &r : relays) by_host[r.from].push_back(r.hits);
  std::vector<std::string> ids;
  for (const Host &h : hosts_) ids.push_back(h.node_id);
  // The header: magic, version, flags, id length, id, boot, seq, epoch, time, part, parts.
  m->relay_size = relay_wire_bytes(ids, by_host, 4 + 3 + hosts_[owner].node_id.size() + 32 + 4);
  host_stats_[owner].relayed += relays.size();
  m->relay = std::move(relays);
  broadcast(owner, m);
}

// A relay: every entry is charged, but those of this host's own hits; each source is shared.
void ClusterSim::apply_relays(size_t to, const Message &m) {
  Host &host = hosts_[to];
  for (const Relay &r : m.relay) {
    host.hot_until[r.key] = now_ + kHotPeriods * s_.period;
    if (r.from != to) debit_entry(to, r.key, r.hits);
  }
}

}  // namespace dt::sim
