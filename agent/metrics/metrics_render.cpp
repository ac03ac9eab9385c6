// metrics_render.cpp - the exposition text (format 0.0.4) of what a scrape read: the
// dataplane's counters, the bans, the cluster's counters and peers, the query socket and
// the adaptive rules.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "bans/ban_store.h"
#include "dataplane/policy.h"
#include "metrics/metrics.h"
#include "policy/escalation_rows.h"

namespace dt {
namespace {

using Labels = std::vector<std::pair<const char *, std::string>>;

// Shortest text that reads back as the same double (Prometheus parses Go floats).
std::string format_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Appends metric families to one exposition text: HELP and TYPE, then samples.
class Exposition {
 public:
  void family(const char *name, const char *type, const char *help) {
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const char *name, const Labels &labels, const std::string &value) {
    text_ += name;
    if (!labels.empty()) {
      text_ += '{';
      for (size_t i = 0; i < labels.size(); i++) {
        text_ += (i ? "," : "") + std::string(labels[i].first) + "=\"";
        text_ += escape_label_value(labels[i].second) + "\"";
      }
      text_ += '}';
    }
    text_ += " " + value + "\n";
  }
  void sample(const char *name, const Labels &labels, uint64_t v) { sample(name, labels, std::to_string(v)); }
  void sample_double(const char *name, const Labels &labels, double v) { sample(name, labels, format_double(v)); }

  // A counter family of one sample per value of one label: {label="value"} count.
  void counters_by(const char *name, const char *help, const char *label,
                   std::initializer_list<std::pair<const char *, uint64_t>> samples) {
    family(name, "counter", help);
    for (const auto &[value, n] : samples) sample(name, {{label, value}}, n);
  }
  // A rule's packets by verdict (dthrottle_rule_packets_total, its family written once).
  void rule_packets(const std::string &rule, uint64_t passed, uint64_t dropped, uint64_t would_drop) {
    const std::pair<const char *, uint64_t> by_verdict[] = {
        {"passed", passed}, {"dropped", dropped}, {"would_drop", would_drop}};
    for (const auto &[verdict, n] : by_verdict)
      sample("dthrottle_rule_packets_total", {{"rule", rule}, {"verdict", verdict}}, n);
  }

  // A family of one unlabelled sample.
  void counter(const char *name, const char *help, uint64_t v) {
    family(name, "counter", help);
    sample(name, {}, v);
  }
  void gauge(const char *name, const char *help, double v) {
    family(name, "gauge", help);
    sample_double(name, {}, v);
  }

  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

// Byte rules' frame bytes per rule and verdict; no family at all without a byte rule.
void render_rule_bytes(Exposition &x, const MapView &m) {
  std::vector<const RuleCount *> rows;
  if (m.rules.empty() && (m.default_bytes.bytes_passed || m.default_bytes.bytes_dropped))
    rows.push_back(&m.default_bytes);
  for (const RuleCount &r : m.rules)
    if (r.bytes_passed || r.bytes_dropped) rows.push_back(&r);
  if (rows.empty()) return;
  x.family("dthrottle_rule_bytes_total", "counter",
           "Frame bytes (Ethernet header included) decided by the buckets of byte rules, by rule and verdict.");
  for (const RuleCount *r : rows) {
    const std::string name = r->name.empty() ? "default" : r->name;
    x.sample("dthrottle_rule_bytes_total", {{"rule", name}, {"verdict", "passed"}}, r->bytes_passed);
    x.sample("dthrottle_rule_bytes_total", {{"rule", name}, {"verdict", "dropped"}}, r->bytes_dropped);
  }
}

// The allow and deny lists (docs/lists.md); no family at all while neither was ever loaded.
void render_lists(Exposition &x, const MapView &m) {
  const dt_list_stats &l = m.lists;
  if (!m.list_prefixes[DT_LIST_ALLOW] && !m.list_prefixes[DT_LIST_DENY] && !l.allowed && !l.denied && !l.would_drop)
    return;
  x.family("dthrottle_list_packets_total", "counter",
           "IP packets decided by the allow and deny lists, by list and verdict (would_drop: the deny list "
           "under --dry-run).");
  x.sample("dthrottle_list_packets_total", {{"list", "allow"}, {"verdict", "passed"}}, l.allowed);
  x.sample("dthrottle_list_packets_total", {{"list", "deny"}, {"verdict", "dropped"}}, l.denied);
  x.sample("dthrottle_list_packets_total", {{"list", "deny"}, {"verdict", "would_drop"}}, l.would_drop);
  x.family("dthrottle_list_prefixes", "gauge", "Prefixes in force in the allow and deny lists (both families).");
  x.sample("dthrottle_list_prefixes", {{"list", "allow"}}, uint64_t{m.list_prefixes[DT_LIST_ALLOW]});
  x.sample("dthrottle_list_prefixes", {{"list", "deny"}}, uint64_t{m.list_prefixes[DT_LIST_DENY]});
}

// agent capture's sampler (docs/capture.md); no family at all while nothing was ever sampled.
void render_capture(Exposition &x, const MapView &m) {
  const dt_capture_cpu &c = m.capture;
  if (!c.captured && !c.sampled_out && !c.ring_full) return;
  x.counters_by("dthrottle_capture_packets_total",
                "Packets agent capture's sampler kept (captured), left out by its per-CPU rate bound (sampled_out), "
                "or lost to a full ring (ring_full).",
                "outcome", {{"captured", c.captured}, {"sampled_out", c.sampled_out}, {"ring_full", c.ring_full}});
}

// The bans: how many, by where they come from, and the packets of the busiest ones.
void render_bans(Exposition &x, const MapView &m) {
  uint64_t local = 0, peer = 0;
  for (const Ban &b : m.bans) (b.remote ? peer : local)++;
  x.family("dthrottle_bans", "gauge",
           "Bans in force (agent ban, the query socket, the bouncer: local; learned: peer).");
  x.sample("dthrottle_bans", {{"from", "local"}}, local);
  x.sample("dthrottle_bans", {{"from", "peer"}}, peer);
  std::vector<const Ban *> busiest;
  for (const Ban &b : m.bans)
    if (b.dropped || b.would_drop) busiest.push_back(&b);
  std::sort(busiest.begin(), busiest.end(),
            [](const Ban *a, const Ban *b) { return a->dropped + a->would_drop > b->dropped + b->would_drop; });
  if (busiest.size() > kMaxBanSeries) busiest.resize(kMaxBanSeries);
  x.family("dthrottle_ban_packets_total", "counter",
           "Packets of a ban by verdict (dropped; would_drop: passed in dry run), for the bans with the most packets.");
  for (const Ban *b : busiest)
    for (auto [verdict, n] : {std::pair{"dropped", b->dropped}, {"would_drop", b->would_drop}})
      x.sample("dthrottle_ban_packets_total",
               {{"prefix", ban_prefix_text(b->prefix)}, {"origin", b->origin}, {"verdict", verdict}}, n);
}

// How each named rule keys its buckets, 1 per rule; no family at all unless a rule is keyed
// by destination (its dthrottle_rule_packets_total then count a destination's packets).
void render_rule_key_by(Exposition &x, const MapView &m) {
  if (m.dest_rules.empty()) return;
  x.family("dthrottle_rule_key_by", "gauge",
           "How a rule keys its buckets (1 per rule): key_by=\"source\" (a bucket per source) or \"destination\" "
           "(a bucket per destination address, whatever the sources).");
  for (const RuleCount &r : m.rules) {
    const bool dest = std::find(m.dest_rules.begin(), m.dest_rules.end(), r.name) != m.dest_rules.end();
    x.sample("dthrottle_rule_key_by", {{"rule", r.name}, {"key_by", dest ? "destination" : "source"}}, 1);
  }
}

void render_dataplane(Exposition &x, const MetricsInfo &info, const MapView &m) {
  const dt_stats &s = m.stats;
  x.counters_by("dthrottle_packets_total",
                "IP packets decided by a source's token bucket, by verdict; would_drop: passed in dry run where "
                "enforcing would have dropped them (deny rules' included).",
                "verdict", {{"passed", s.passed}, {"dropped", s.dropped}, {"would_drop", m.would_drop}});
  x.counters_by("dthrottle_action_packets_total",
                "IP packets decided without a bucket: passed by allow rules, dropped by deny rules.", "action",
                {{"allow", s.allowed}, {"deny", s.denied}});
  x.family("dthrottle_rule_packets_total", "counter",
           "IP packets decided by a rule, by rule and verdict (allow rules pass, deny rules drop; "
           "would_drop: passed in dry run instead of dropped).");
  if (m.rules.empty()) x.rule_packets("default", s.passed, s.dropped, m.would_drop);
  for (const RuleCount &r : m.rules) x.rule_packets(r.name, r.passed, r.dropped, r.would_drop);
  render_rule_bytes(x, m);
  render_rule_key_by(x, m);
  render_lists(x, m);
  render_capture(x, m);
  // The global counters with a metric of their own (abi/stats.h's DT_STATS_FIELDS).
#define DT_METRIC_COUNTER(field, label, metric, help) \
  if (metric[0]) x.counter(metric, help, s.field);
  DT_STATS_FIELDS(DT_METRIC_COUNTER)
#undef DT_METRIC_COUNTER
  x.gauge("dthrottle_active_sources", "Sources with a bucket in the table (idle ones stay until evicted).",
          static_cast<double>(m.sources));
  x.gauge("dthrottle_source_capacity", "Capacity of the source table (--max-sources).", info.capacity);
  x.gauge("dthrottle_source_table_fill_ratio", "Sources in the table divided by its capacity.",
          info.capacity ? static_cast<double>(m.sources) / info.capacity : 0.0);
  x.counter("dthrottle_lru_evictions_total",
            "Estimate of the sources the full table evicted (least recently seen first): buckets created "
            "minus buckets present, never decreasing.",
            m.evictions);
}

void render_query(Exposition &x, const MetricsSnapshot &snap) {
  const QueryCounters &q = snap.query_counters;
  x.counters_by("dthrottle_query_answers_total", "Query-socket answers, by answer (OK, NO, WAIT of RESERVE).", "answer",
                {{"ok", q.answered_ok}, {"no", q.answered_no}, {"wait", q.answered_wait}});
  x.counters_by("dthrottle_query_errors_total", "Query-socket requests refused as malformed, by reason.", "reason",
                {{"empty_tag", q.err_empty}, {"tag_too_long", q.err_too_long}, {"nul_byte", q.err_nul}});
  x.counter("dthrottle_query_connections_total", "Query-socket connections served.", q.connections_accepted);
  x.gauge("dthrottle_query_connections_open", "Query-socket connections open now.",
          static_cast<double>(q.connections_open));
  x.counter("dthrottle_query_connections_refused_total", "Query-socket connections refused (over the limit).",
            q.connections_refused);
  x.counter("dthrottle_query_backlog_disconnects_total", "Query clients cut off for not reading their answers.",
            q.backlog_disconnects);
  x.counter("dthrottle_query_idle_closed_total",
            "Query-socket connections closed after --query-idle-timeout of silence.", q.idle_closed);
  x.counter("dthrottle_query_connections_evicted_total",
            "Query-socket connections idle a second or more, closed at the connection limit for a new one.",
            q.connections_evicted);
  x.counter("dthrottle_query_admin_refused_total",
            "Admin commands (BUSY) refused: the peer is not root, the agent's uid or in --query-admin-uids "
            "(or came over TCP).",
            q.admin_refused);
  x.gauge("dthrottle_tag_buckets", "Tag buckets held by the agent.", static_cast<double>(snap.tag_buckets));
  x.counter("dthrottle_strict_decisions_total", "Strict tag queries decided by Redis.", q.strict_decided);
  x.counter("dthrottle_strict_round_trips_total", "Pipelined batches of strict queries sent to Redis.",
            q.strict_round_trips);
  x.counters_by("dthrottle_strict_redis_errors_total",
                "Strict tag queries Redis could not decide, by what the rule did instead (on_redis_error).", "fallback",
                {{"deny", q.strict_denied_on_error}, {"local", q.strict_local_on_error}});
  x.counters_by("dthrottle_query_busy_signals_total",
                "BUSY lines on the query socket, by whether an adaptive rule took them.", "result",
                {{"taken", q.busy_taken}, {"unknown", q.busy_unknown}});
}

// Adaptive rules: one sample per rule of each family, labelled kind="rule"|"tag" and
// name (a packet rule's name, a tag rule's prefix).
// The events (docs/events.md): made, delivered to the command and the subscribers, dropped.
void render_events(Exposition &x, const EventCounters &e) {
  x.counter("dthrottle_events_total", "Events made (ban, unban, attack_started, ...; docs/events.md).", e.emitted);
  x.counters_by("dthrottle_event_deliveries_total",
                "Events delivered, by sink: --on-event children that exited 0, "
                "lines given to EVENTS subscribers.",
                "sink", {{"command", e.command_ok}, {"stream", e.stream_delivered}});
  x.counters_by("dthrottle_events_dropped_total",
                "Events dropped, by reason: the --on-event queue was full, the "
                "event was over 16 KiB.",
                "reason", {{"queue_full", e.command_dropped}, {"oversized", e.oversized}});
  x.counters_by("dthrottle_event_command_failures_total",
                "--on-event children that failed, by how: a non-zero "
                "exit or a signal, not started, killed at --on-event-timeout.",
                "reason",
                {{"exit", e.command_failed}, {"spawn", e.command_spawn_errors}, {"timeout", e.command_timeouts}});
  x.gauge("dthrottle_event_subscribers", "EVENTS subscribers of the query socket now.",
          static_cast<double>(e.subscribers));
  x.counter("dthrottle_event_subscribers_cut_total", "EVENTS subscribers disconnected for not reading.", e.stream_slow);
  x.counter("dthrottle_event_subscribers_refused_total", "EVENTS subscriptions refused at the cap.", e.stream_refused);
}

void render_adaptive(Exposition &x, const MetricsSnapshot &snap) {
  struct Family {
    const char *name, *type, *help;
    double (*value)(const AdaptiveStatus &);
  };
  static const Family families[] = {
      {"dthrottle_adaptive_factor", "gauge",
       "Adaptive rule's factor in force: its limit is rate x factor (the lowest of this host's and its live peers').",
       [](const AdaptiveStatus &s) { return s.factor; }},
      {"dthrottle_adaptive_limit", "gauge", "Adaptive rule's rate in force, per key per second (rate x factor).",
       [](const AdaptiveStatus &s) { return s.rate * s.factor; }},
      {"dthrottle_adaptive_own_factor", "gauge", "Adaptive rule's factor from this host's own busy signals.",
       [](const AdaptiveStatus &s) { return s.local_factor; }},
      {"dthrottle_adaptive_busiest_rate", "gauge",
       "Adaptive rule: the busiest key's admitted rate over the last second (this host and its peers).",
       [](const AdaptiveStatus &s) { return s.observed; }},
      {"dthrottle_adaptive_busy_signals_total", "counter", "Busy signals an adaptive rule received on this host.",
       [](const AdaptiveStatus &s) { return static_cast<double>(s.busy_signals); }},
      {"dthrottle_adaptive_decreases_total", "counter", "Times a busy signal lowered an adaptive rule's own factor.",
       [](const AdaptiveStatus &s) { return static_cast<double>(s.decreases); }},
  };
  for (const Family &f : families) {
    x.family(f.name, f.type, f.help);
    for (const AdaptiveStatus &s : snap.adaptive)
      x.sample_double(f.name, {{"kind", s.kind == AdaptiveKind::Packet ? "rule" : "tag"}, {"name", s.name}},
                      f.value(s));
  }
}

// Escalation (docs/rules.md "Escalation"): the automatic bans and why some were not made.
void render_escalation(Exposition &x, const EscalationStatus &e) {
  std::string help = "Escalation's decisions:";
  for (const EscalationCounterRow &r : kEscalationCounterRows)
    help += std::string(&r == kEscalationCounterRows ? " " : ", ") + r.what + " (" + r.meaning + ")";
  x.family("dthrottle_escalation_total", "counter", (help + ".").c_str());
  for (const EscalationCounterRow &r : kEscalationCounterRows)
    x.sample("dthrottle_escalation_total", {{"what", r.what}}, r.value(e));
  x.gauge("dthrottle_escalation_bans_in_force", "Automatic bans (and dry run's would-bans) in force.",
          static_cast<double>(e.in_force));
  x.gauge("dthrottle_escalation_offenders", "Offenders escalation tracks.", static_cast<double>(e.tracked));
}

// Bans between peers (docs/bans.md "Cluster"): each peer notice's fate (bans/ban_sync.h).
void render_ban_notices(Exposition &x, const BanSyncCounters &b) {
  x.family("dthrottle_peer_ban_notices_total", "counter",
           "Peers' ban notices, by what became of them: learned, updated, lifted, stale (older than a lift or the "
           "ban held here), held (another origin's ban of the prefix is in force here), refused_cap (16,384 learned "
           "bans), refused_duration (over 30 days), refused_write, refused_peer (--peer-bans), refused_prefix "
           "(--peer-ban-min-prefix), refused_never_ban (a peer, hub or allowed address), refused_peer_cap "
           "(--peer-ban-max), refused_rate (--peer-ban-rate), refused_time (a set or lift time in the future or "
           "over 30 days ago), refused_origin (a lift of a ban the peer did not set), refused_tombstone (no room).");
  for (const BanSyncCounterRow &r : kBanSyncCounterRows)
    if (r.notice) x.sample("dthrottle_peer_ban_notices_total", {{"result", r.name}}, b.*r.field);
  x.counter("dthrottle_peer_bans_clamped_total", "Peers' bans longer than --peer-ban-max-duration, cut to it.",
            b.clamped);
  x.gauge("dthrottle_ban_tombstones", "Lifts remembered (this host's, announced; and the peers').",
          static_cast<double>(b.tombstones));
}

// The cluster's counters with a metric (cluster/cluster_counters.h), in the table's order;
// the total of the rejections is their family by reason.
void render_cluster_counters(Exposition &x, const ClusterCounters &c) {
  for (const ClusterCounterRow &r : kClusterCounterRows) {
    if (!*r.metric) continue;
    if (!r.field) {
      x.family(r.metric, r.type, r.help);
      for (const auto &[reason, n] : c.rejected) x.sample(r.metric, {{"reason", reason}}, n);
    } else if (!strcmp(r.type, "gauge")) {
      x.gauge(r.metric, r.help, static_cast<double>(r.value(c)));
    } else {
      x.counter(r.metric, r.help, r.value(c));
    }
  }
}

void render_cluster(Exposition &x, const MetricsSnapshot &snap) {
  x.gauge("dthrottle_report_collect_duration_seconds",
          "Time the last period's report took: collect the hits served (dt_collect), encode, publish. "
          "There is no refill sweep (buckets refill lazily in the packet path).",
          snap.last_period_seconds);
  x.gauge("dthrottle_last_report_entries", "Sources in the last period's report.",
          static_cast<double>(snap.last_report_entries));
  x.gauge("dthrottle_last_report_messages", "Messages the last period's report was split into.",
          static_cast<double>(snap.last_report_messages));
  x.gauge("dthrottle_last_report_bytes", "Bytes of the last period's report.",
          static_cast<double>(snap.last_report_bytes));
  render_cluster_counters(x, snap.counters);
  render_ban_notices(x, snap.counters.bans);
}

// One sample per peer of each peer family, labelled peer: the gauges, then the counters
// (PeerState's fields of the same name).
void render_peers(Exposition &x, const MetricsSnapshot &snap, uint64_t now_ns) {
  struct PeerGauge {
    const char *name, *help;
    std::string (*value)(const PeerState &, uint64_t now_ns);
  };
  static const PeerGauge kGauges[] = {
      {"dthrottle_peer_up", "1 if the peer was heard from recently (--down-after), else 0.",
       [](const PeerState &p, uint64_t) { return std::string(p.up ? "1" : "0"); }},
      {"dthrottle_peer_last_heard_age_seconds", "Seconds since the last message accepted from the peer.",
       [](const PeerState &p, uint64_t now) {
         return format_double(now > p.last_heard_ns ? (now - p.last_heard_ns) / 1e9 : 0.0);
       }},
  };
  struct PeerCounter {
    const char *name, *help;
    uint64_t PeerState::*field;
  };
  static const PeerCounter kCounters[] = {
      {"dthrottle_peer_accepted_messages_total", "Messages accepted from the peer.", &PeerState::accepted},
      {"dthrottle_peer_lost_messages_total", "Messages from the peer missing in sequence gaps.", &PeerState::lost},
      {"dthrottle_peer_recovered_messages_total", "Of the lost messages, those resent and applied.",
       &PeerState::recovered},
      {"dthrottle_peer_stale_messages_total", "Messages from the peer too old to charge.", &PeerState::stale},
      {"dthrottle_peer_duplicate_messages_total", "Duplicate or replayed messages from the peer.",
       &PeerState::duplicates},
      {"dthrottle_peer_restarts_total", "Restarts of the peer's agent seen (new boot id).", &PeerState::restarts},
  };
  for (const auto &g : kGauges) {
    x.family(g.name, "gauge", g.help);
    for (const auto &[id, p] : snap.peers) x.sample(g.name, {{"peer", id}}, g.value(p, now_ns));
  }
  for (const auto &c : kCounters) {
    x.family(c.name, "counter", c.help);
    for (const auto &[id, p] : snap.peers) x.sample(c.name, {{"peer", id}}, p.*c.field);
  }
}

}  // namespace

std::string escape_label_value(const std::string &v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string render_metrics(const MetricsInfo &info, const MapView &maps, const MetricsSnapshot &snap, uint64_t now_ns) {
  Exposition x;
  x.family("dthrottle_info", "gauge", "The agent's version and configuration (always 1).");
  Labels labels = {{"version", info.version},
                   {"node_id", info.node_id},
                   {"interface", info.iface},
                   {"rate", format_double(info.rate)},
                   {"burst", std::to_string(info.burst)},
                   {"xdp_mode", info.xdp_mode}};
  if (info.bytes) labels.emplace_back("unit", "bytes");  // rate in bytes/s, burst in bytes
  x.sample("dthrottle_info", labels, uint64_t{1});
  render_dataplane(x, info, maps);
  x.counter("dthrottle_metrics_connections_in_place_total",
            "Metrics connections beyond the queue's bound, served by the accepting thread (which accepts "
            "nothing meanwhile).",
            snap.metrics_served_in_place);
  if (!info.pin_dir.empty()) render_bans(x, maps);
  if (snap.cluster) {
    render_cluster(x, snap);
    render_peers(x, snap, now_ns);
  }
  if (snap.query) render_query(x, snap);
  if (snap.events) render_events(x, snap.event_counters);
  if (!snap.adaptive.empty()) render_adaptive(x, snap);
  if (snap.escalation.active) render_escalation(x, snap.escalation);
  return x.take();
}

}  // namespace dt
