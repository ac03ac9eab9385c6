// metrics.h - Prometheus text exposition (format 0.0.4) of the agent's state on
// GET /metrics (--metrics ADDR:PORT), served by cpp-httplib in its own threads.
//
// The event loop is single-threaded and owns the cluster state, so it never shares
// it: once per period it copies a small MetricsSnapshot under a mutex (publish()).
// A scrape renders that latest snapshot plus what the HTTP thread reads itself from
// the BPF maps (the global counters, one syscall; the bucket count, a walk of the
// table that is cached for a second so scrapes cannot turn into a table-walk loop).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adaptive/adaptive.h"
#include "bans/ban_types.h"
#include "cluster/cluster.h"
#include "cluster_core/peer_tracker.h"
#include "common/endpoint.h"
#include "dataplane/map_reader.h"
#include "dthrottle/capture.h"
#include "dthrottle/common.h"
#include "dthrottle/lists.h"
#include "events/event_bus.h"
#include "policy/escalation.h"
#include "query/query_server.h"

namespace dt {

// Where the metrics server listens: a numeric address (a bare port is 127.0.0.1; another
// address is the user asking by name, logged once) and a port; parse_metrics_address
// (common/endpoint.h) reads it. At most 8 connections are queued or served at once, each
// with 2 s read and write timeouts and one request; beyond them the accepting thread
// serves in place and the rest wait in the kernel's backlog (metrics.cpp).
using MetricsAddress = HostPort;

// What never changes while the agent runs (the info metric, the table capacity).
struct MetricsInfo {
  std::string version, node_id, iface, xdp_mode;
  double rate = 0;
  uint64_t burst = 0;
  uint32_t capacity = 0;     // --max-sources: entries of the bucket table
  bool bytes = false;        // rate and burst are a byte budget (dthrottle_info gains unit="bytes")
  std::string pin_dir = "";  // where the bans are pinned (per-ban metrics; "": none)
};

// What the event loop publishes (its own state, copied once per period).
struct MetricsSnapshot {
  bool cluster = false;  // without a cluster, no cluster metric is rendered
  ClusterCounters counters;
  std::map<std::string, PeerState> peers;
  double last_period_seconds = 0;  // the loop's time on the last period's report
  uint64_t last_report_entries = 0, last_report_messages = 0, last_report_bytes = 0;
  bool query = false;  // a query socket is served: render its answers
  QueryCounters query_counters;
  uint64_t tag_buckets = 0;
  std::vector<AdaptiveStatus> adaptive;  // adaptive rules (empty: none)
  EscalationStatus escalation;           // rules with escalate (inactive: none)
  bool events = false;                   // the agent's events (docs/events.md): render their counters
  EventCounters event_counters;
  uint64_t metrics_served_in_place = 0;  // the metrics server's own bound (metrics.cpp), set by scrapes
};

// What the HTTP thread reads from the maps for one scrape (read_rule_table: the
// counters `agent stats` shows too).
using RuleCount = RuleCounters;

struct MapView {
  dt_stats stats{};
  std::vector<RuleCount> rules;           // named rules (empty: everything is rule "default")
  uint64_t would_drop = 0;                // dry run: the sum of every rule's would-drop
  RuleCount default_bytes;                // rule 0's bytes when rules are unnamed (a byte --rate/--burst)
  uint64_t sources = 0;                   // buckets in the table
  uint64_t evictions = 0;                 // EvictionEstimate::update
  dt_list_stats lists{};                  // the allow and deny lists' counters (docs/lists.md)
  uint32_t list_prefixes[DT_LISTS] = {};  // prefixes in force per list, both families
  std::vector<Ban> bans;                  // with their counts (docs/bans.md)
  std::vector<std::string> dest_rules;    // the named rules keyed by destination (key_by)
  dt_capture_cpu capture{};               // agent capture's sampler, summed over CPUs (docs/capture.md)
};

// Per-ban packet series: the bans with the most packets, at most this many (a label per
// prefix: a bouncer's tens of thousands of bans must not explode the series).
constexpr size_t kMaxBanSeries = 100;

// Buckets created minus buckets present is how many the LRU table evicted (buckets
// are never deleted otherwise). It is an estimate: the two are read at different
// moments. A counter must never decrease, so this keeps the highest value seen.
class EvictionEstimate {
 public:
  uint64_t update(uint64_t created, uint64_t present) {
    if (created > present && created - present > max_) max_ = created - present;
    return max_;
  }

 private:
  uint64_t max_ = 0;
};

// "\" -> "\\", '"' -> "\"", newline -> "\n": a label value in exposition format.
std::string escape_label_value(const std::string &v);

// The whole exposition text. now_ns (CLOCK_MONOTONIC) dates the peers' silences.
std::string render_metrics(const MetricsInfo &info, const MapView &maps, const MetricsSnapshot &snap, uint64_t now_ns);

// The HTTP server, in two steps: bind() before the dataplane is touched (a busy port
// must not cost a taken-over throttle its state), serve() once it is up. Stopped
// (threads joined) by the destructor.
class MetricsServer {
 public:
  ~MetricsServer();
  // Binds addr; nullptr with a sentence in *err if it cannot (port in use, not an
  // address of this host).
  static std::unique_ptr<MetricsServer> bind(const MetricsAddress &addr, std::string *err);
  // Serves GET /metrics from threads of its own. The maps must outlive the server.
  void serve(const MetricsInfo &info, const MapFds &maps);
  // Replaces the snapshot scrapes render (called by the event loop).
  void publish(const MetricsSnapshot &snap);

  struct Impl;

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt
