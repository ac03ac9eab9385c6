// cluster_status.cpp - the cluster status files, JSON and text, made from the counter
// tables (cluster_counters.h, bans/ban_sync.h): no counter is listed here by hand.
#include "cluster/cluster_status.h"

#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "common/json.h"

namespace dt {
namespace {

// The key of a table row's `json` in `section` ("": the "counters" object), nullptr if
// the row belongs to another object or to none.
const char *json_key_in(const char *json, const char *section) {
  const char *dot = strchr(json, '.');
  if (!*section) return *json && !dot ? json : nullptr;
  const size_t n = strlen(section);
  return dot && static_cast<size_t>(dot - json) == n && !strncmp(json, section, n) ? dot + 1 : nullptr;
}

Json counters_json(const ClusterCounters &c, const char *section) {
  Json j = Json::object();
  for (const ClusterCounterRow &r : kClusterCounterRows)
    if (const char *key = json_key_in(r.json, section)) j[key] = r.value(c);
  return j;
}

// The "bans" object: the cluster's bans messages, and each peer notice's fate.
Json ban_sync_json(const ClusterCounters &c) {
  Json j = counters_json(c, "bans");
  for (const BanSyncCounterRow &r : kBanSyncCounterRows) j[r.name] = c.bans.*r.field;
  return j;
}

Json peer_json(const std::string &id, const PeerState &p, uint64_t now_ns) {
  return {{"node_id", id},
          {"up", p.up},
          {"last_heard_ago_ms", (now_ns - p.last_heard_ns) / 1000000},
          {"accepted", p.accepted},
          {"duplicates", p.duplicates},
          {"lost", p.lost},
          {"recovered", p.recovered},
          {"stale", p.stale},
          {"last_age_ms", p.last_age_ms},
          {"restarts", p.restarts},
          {"boot_rejected", p.boot_rejected}};
}

Json aggregates_json(const AggregateCounters &a) {
  return {{"applied", a.applied},     {"standby", a.standby},         {"replayed", a.replayed},
          {"overlaps", a.overlaps},   {"own_missing", a.own_missing}, {"own_hits_subtracted", a.own_hits_subtracted},
          {"failovers", a.failovers}, {"active_hub", a.active_hub}};
}

// A row's text with its value in place of the #.
std::string phrase(const char *text, uint64_t v) {
  std::string t = text;
  const size_t at = t.find('#');
  return at == std::string::npos ? t : t.replace(at, 1, std::to_string(v));
}

// The text view's counter lines, in the order of their first counter in the tables.
using TextLines = std::vector<std::pair<std::string, std::string>>;
void add_phrase(TextLines &lines, const char *line, const std::string &p) {
  if (!*line) return;
  for (auto &[name, text] : lines)
    if (name == line) {
      text += ", " + p;
      return;
    }
  lines.emplace_back(line, p);
}

std::string counter_lines(const ClusterCounters &c) {
  TextLines lines;
  for (const ClusterCounterRow &r : kClusterCounterRows) add_phrase(lines, r.line, phrase(r.text, r.value(c)));
  for (const BanSyncCounterRow &r : kBanSyncCounterRows) add_phrase(lines, r.line, phrase(r.text, c.bans.*r.field));
  std::string t;
  char head[32];
  for (const auto &[name, text] : lines) {
    snprintf(head, sizeof head, "  %-8s ", name.c_str());
    t += head + text + "\n";
  }
  return t;
}

}  // namespace

std::string cluster_status_json(const ClusterStatusHead &head, const ClusterCounters &c,
                                const std::map<std::string, PeerState> &peers) {
  Json j;
  j["node_id"] = head.node_id;
  j["written_unix_ms"] = head.written_unix_ms;
  j["epoch"] = head.epoch;
  j["period_ms"] = head.period_ns / 1000000;
  j["security"] = head.security;
  j["counters"] = counters_json(c, "");
  j["rejected"] = Json::object();
  for (const auto &[reason, count] : c.rejected) j["rejected"][reason] = count;
  j["peers"] = Json::array();
  for (const auto &[id, p] : peers) j["peers"].push_back(peer_json(id, p, head.now_ns));
  j["aggregates"] = aggregates_json(c.aggregates);
  j["bans"] = ban_sync_json(c);
  j["verified"] = counters_json(c, "verified");
  j["received_by_kind"] = Json::object();
  for (const auto &[kind, bytes] : c.received_bytes_by_kind)
    j["received_by_kind"][kind] = {{"bytes", bytes}, {"messages", c.received_messages_by_kind.at(kind)}};
  return dump_json(j);
}

std::string cluster_status_text(const ClusterStatusHead &head, const ClusterCounters &c,
                                const std::map<std::string, PeerState> &peers) {
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  size_t up = 0;
  for (const auto &[id, p] : peers) up += p.up;
  char line[256];
  snprintf(line, sizeof line, "cluster: node %s, epoch %u, period %llu ms, %zu of %zu peers up, security %s\n",
           head.node_id.c_str(), head.epoch, u(head.period_ns / 1000000), up, peers.size(), head.security.c_str());
  std::string t = line + counter_lines(c);
  for (const auto &[k, v] : c.rejected) {
    snprintf(line, sizeof line, "  rejected %-20s %llu\n", k.c_str(), u(v));
    t += line;
  }
  snprintf(line, sizeof line, "  %-24s %-5s %10s %10s %8s %8s %8s\n", "PEER", "STATE", "HEARD AGO", "ACCEPTED", "DUPS",
           "LOST", "RESTARTS");
  t += line;
  for (const auto &[id, p] : peers) {
    snprintf(line, sizeof line, "  %-24s %-5s %9.1fs %10llu %8llu %8llu %8llu\n", id.c_str(), p.up ? "up" : "DOWN",
             (head.now_ns - p.last_heard_ns) / 1e9, u(p.accepted), u(p.duplicates), u(p.lost), u(p.restarts));
    t += line;
  }
  return t;
}

}  // namespace dt
