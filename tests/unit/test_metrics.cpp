// test_metrics.cpp - the Prometheus exposition text: exact output for fixed inputs,
// label escaping, line syntax, the eviction estimate, and the --metrics address.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "metrics/metrics.h"

namespace {

constexpr uint64_t kNow = 100'000'000'000ull;  // the scrape's monotonic time

dt::MetricsInfo fixed_info() { return {"0.1.0", "edge-1", "eth0", "native", 0.5, 50, 1000}; }

dt::MapView fixed_maps() {
  dt::MapView m;
  m.stats.passed = 1200;
  m.stats.dropped = 345;
  m.stats.new_sources = 260;
  m.stats.parse_errors = 3;
  m.stats.non_ip = 4;
  m.stats.fail_open = 5;
  m.stats.contended = 6;
  m.stats.nd_exempt = 7;
  m.stats.exempt = 8;
  m.stats.report_overflow = 9;
  m.stats.allowed = 11;
  m.stats.denied = 12;
  m.stats.ban_dropped = 14;
  m.stats.ban_would_drop = 15;
  m.stats.ban_expired = 16;
  m.stats.cookie_sent = 17;
  m.stats.cookie_would_send = 18;
  m.stats.cookie_ack_valid = 19;
  m.stats.cookie_ack_invalid = 20;
  m.stats.verified_hits = 21;
  m.would_drop = 13;
  m.sources = 250;
  m.evictions = 10;
  return m;
}

dt::MetricsSnapshot fixed_cluster() {
  dt::MetricsSnapshot s;
  s.cluster = true;
  dt::ClusterCounters &c = s.counters;
  c.reports_sent = 500;
  c.messages_sent = 501;
  c.bytes_sent = 64000;
  c.entries_sent = 1900;
  c.messages_received = 990;
  c.bytes_received = 120000;
  c.messages_applied = 980;
  c.entries_applied = 3000;
  c.hits_debited = 4500;
  c.duplicates = 6;
  c.debit_failures = 1;
  c.collect_errors = 2;
  c.rejected = {{"bad magic", 3}, {"truncated", 1}};
  c.ban_messages_sent = 7;
  c.ban_messages_received = 14;
  c.bans.learned = 5;
  c.bans.lifted = 2;
  c.bans.rejected_cap = 1;
  s.last_period_seconds = 0.00025;
  s.last_report_entries = 12;
  s.last_report_messages = 1;
  s.last_report_bytes = 180;
  dt::PeerState up;
  up.up = true;
  up.last_heard_ns = kNow - 1'500'000'000ull;
  up.accepted = 490;
  dt::PeerState down;
  down.up = false;
  down.last_heard_ns = kNow - 12'250'000'000ull;
  down.accepted = 490;
  down.duplicates = 6;
  down.lost = 4;
  down.restarts = 1;
  s.peers = {{"h2", up}, {"h3", down}};
  return s;
}

const char kSingleHost[] =
    R"(# HELP dthrottle_info The agent's version and configuration (always 1).
# TYPE dthrottle_info gauge
dthrottle_info{version="0.1.0",node_id="edge-1",interface="eth0",rate="0.5",burst="50",xdp_mode="native"} 1
# HELP dthrottle_packets_total IP packets decided by a source's token bucket, by verdict; would_drop: passed in dry run where enforcing would have dropped them (deny rules' included).
# TYPE dthrottle_packets_total counter
dthrottle_packets_total{verdict="passed"} 1200
dthrottle_packets_total{verdict="dropped"} 345
dthrottle_packets_total{verdict="would_drop"} 13
# HELP dthrottle_action_packets_total IP packets decided without a bucket: passed by allow rules, dropped by deny rules.
# TYPE dthrottle_action_packets_total counter
dthrottle_action_packets_total{action="allow"} 11
dthrottle_action_packets_total{action="deny"} 12
# HELP dthrottle_rule_packets_total IP packets decided by a rule, by rule and verdict (allow rules pass, deny rules drop; would_drop: passed in dry run instead of dropped).
# TYPE dthrottle_rule_packets_total counter
dthrottle_rule_packets_total{rule="default",verdict="passed"} 1200
dthrottle_rule_packets_total{rule="default",verdict="dropped"} 345
dthrottle_rule_packets_total{rule="default",verdict="would_drop"} 13
# HELP dthrottle_new_sources_total Buckets created (new sources).
# TYPE dthrottle_new_sources_total counter
dthrottle_new_sources_total 260
# HELP dthrottle_malformed_packets_total Truncated or malformed headers, passed without a bucket.
# TYPE dthrottle_malformed_packets_total counter
dthrottle_malformed_packets_total 3
# HELP dthrottle_non_ip_packets_total Non-IP frames (ARP, LLDP, ...), passed without a bucket.
# TYPE dthrottle_non_ip_packets_total counter
dthrottle_non_ip_packets_total 4
# HELP dthrottle_fail_open_packets_total Packets passed without a decision (no policy, or no bucket).
# TYPE dthrottle_fail_open_packets_total counter
dthrottle_fail_open_packets_total 5
# HELP dthrottle_contended_packets_total Packets dropped because their bucket's compare-and-swap kept losing races (not in packets_total).
# TYPE dthrottle_contended_packets_total counter
dthrottle_contended_packets_total 6
# HELP dthrottle_nd_packets_total IPv6 neighbour discovery packets, passed without a bucket.
# TYPE dthrottle_nd_packets_total counter
dthrottle_nd_packets_total 7
# HELP dthrottle_exempt_packets_total Segments of the cluster's own TCP connections (cluster_exempt), passed.
# TYPE dthrottle_exempt_packets_total counter
dthrottle_exempt_packets_total 8
# HELP dthrottle_report_ring_overflows_total Active-source announcements lost to a full ring buffer (the packet path retries them).
# TYPE dthrottle_report_ring_overflows_total counter
dthrottle_report_ring_overflows_total 9
# HELP dthrottle_ban_dropped_packets_total Packets dropped by a ban (agent ban).
# TYPE dthrottle_ban_dropped_packets_total counter
dthrottle_ban_dropped_packets_total 14
# HELP dthrottle_ban_would_drop_packets_total Packets a ban would have dropped, passed in dry run (--dry-run).
# TYPE dthrottle_ban_would_drop_packets_total counter
dthrottle_ban_would_drop_packets_total 15
# HELP dthrottle_ban_expired_packets_total Packets from an address whose ban has expired but is not swept yet, passed.
# TYPE dthrottle_ban_expired_packets_total counter
dthrottle_ban_expired_packets_total 16
# HELP dthrottle_syncookies_sent_total SYNs a prefix budget refused, answered with a SYN cookie (syn_cookies).
# TYPE dthrottle_syncookies_sent_total counter
dthrottle_syncookies_sent_total 17
# HELP dthrottle_syncookies_would_send_total SYNs a rule in dry run would have answered with a SYN cookie.
# TYPE dthrottle_syncookies_would_send_total counter
dthrottle_syncookies_would_send_total 18
# HELP dthrottle_syncookie_acks_valid_total Handshake ACKs whose SYN cookie checked out: their source is verified.
# TYPE dthrottle_syncookie_acks_valid_total counter
dthrottle_syncookie_acks_valid_total 19
# HELP dthrottle_syncookie_acks_invalid_total ACKs of unverified sources without a valid SYN cookie while cookies were being sent (passed on).
# TYPE dthrottle_syncookie_acks_invalid_total counter
dthrottle_syncookie_acks_invalid_total 20
# HELP dthrottle_verified_hits_total Packets of verified sources that skipped a rule's prefix budgets.
# TYPE dthrottle_verified_hits_total counter
dthrottle_verified_hits_total 21
# HELP dthrottle_active_sources Sources with a bucket in the table (idle ones stay until evicted).
# TYPE dthrottle_active_sources gauge
dthrottle_active_sources 250
# HELP dthrottle_source_capacity Capacity of the source table (--max-sources).
# TYPE dthrottle_source_capacity gauge
dthrottle_source_capacity 1000
# HELP dthrottle_source_table_fill_ratio Sources in the table divided by its capacity.
# TYPE dthrottle_source_table_fill_ratio gauge
dthrottle_source_table_fill_ratio 0.25
# HELP dthrottle_lru_evictions_total Estimate of the sources the full table evicted (least recently seen first): buckets created minus buckets present, never decreasing.
# TYPE dthrottle_lru_evictions_total counter
dthrottle_lru_evictions_total 10
# HELP dthrottle_metrics_connections_in_place_total Metrics connections beyond the queue's bound, served by the accepting thread (which accepts nothing meanwhile).
# TYPE dthrottle_metrics_connections_in_place_total counter
dthrottle_metrics_connections_in_place_total 0
)";

// What a cluster snapshot adds after the single-host text.
const char kClusterPart[] =
    R"(# HELP dthrottle_report_collect_duration_seconds Time the last period's report took: collect the hits served (dt_collect), encode, publish. There is no refill sweep (buckets refill lazily in the packet path).
# TYPE dthrottle_report_collect_duration_seconds gauge
dthrottle_report_collect_duration_seconds 0.00025
# HELP dthrottle_last_report_entries Sources in the last period's report.
# TYPE dthrottle_last_report_entries gauge
dthrottle_last_report_entries 12
# HELP dthrottle_last_report_messages Messages the last period's report was split into.
# TYPE dthrottle_last_report_messages gauge
dthrottle_last_report_messages 1
# HELP dthrottle_last_report_bytes Bytes of the last period's report.
# TYPE dthrottle_last_report_bytes gauge
dthrottle_last_report_bytes 180
# HELP dthrottle_reports_sent_total Period reports published.
# TYPE dthrottle_reports_sent_total counter
dthrottle_reports_sent_total 500
# HELP dthrottle_report_messages_sent_total Report messages published.
# TYPE dthrottle_report_messages_sent_total counter
dthrottle_report_messages_sent_total 501
# HELP dthrottle_report_bytes_sent_total Bytes of report messages published.
# TYPE dthrottle_report_bytes_sent_total counter
dthrottle_report_bytes_sent_total 64000
# HELP dthrottle_report_entries_sent_total Source entries published in reports.
# TYPE dthrottle_report_entries_sent_total counter
dthrottle_report_entries_sent_total 1900
# HELP dthrottle_report_prefix_entries_sent_total Of the entries published, prefix buckets (prefix budgets, groups RULE::pBITS).
# TYPE dthrottle_report_prefix_entries_sent_total counter
dthrottle_report_prefix_entries_sent_total 0
# HELP dthrottle_report_dest_entries_sent_total Of the entries published, destination buckets (rules keyed by destination, groups RULE::dst).
# TYPE dthrottle_report_dest_entries_sent_total counter
dthrottle_report_dest_entries_sent_total 0
# HELP dthrottle_report_entries_max Entries of the largest report published since the agent started.
# TYPE dthrottle_report_entries_max gauge
dthrottle_report_entries_max 0
# HELP dthrottle_collect_errors_total Periods whose collection of served hits failed.
# TYPE dthrottle_collect_errors_total counter
dthrottle_collect_errors_total 2
# HELP dthrottle_report_messages_received_total Report messages received from peers.
# TYPE dthrottle_report_messages_received_total counter
dthrottle_report_messages_received_total 990
# HELP dthrottle_report_bytes_received_total Bytes of report messages received.
# TYPE dthrottle_report_bytes_received_total counter
dthrottle_report_bytes_received_total 120000
# HELP dthrottle_report_messages_applied_total Received report messages applied (debited).
# TYPE dthrottle_report_messages_applied_total counter
dthrottle_report_messages_applied_total 980
# HELP dthrottle_report_entries_applied_total Report entries debited from local buckets.
# TYPE dthrottle_report_entries_applied_total counter
dthrottle_report_entries_applied_total 3000
# HELP dthrottle_peer_hits_debited_total Hits served by peers and debited from local buckets.
# TYPE dthrottle_peer_hits_debited_total counter
dthrottle_peer_hits_debited_total 4500
# HELP dthrottle_report_duplicates_total Report messages ignored as duplicates or replays.
# TYPE dthrottle_report_duplicates_total counter
dthrottle_report_duplicates_total 6
# HELP dthrottle_report_recovered_messages_total Report messages missing in a peer's sequence, resent on request and applied.
# TYPE dthrottle_report_recovered_messages_total counter
dthrottle_report_recovered_messages_total 0
# HELP dthrottle_resend_requests_sent_total Requests this agent sent for messages missing from peers.
# TYPE dthrottle_resend_requests_sent_total counter
dthrottle_resend_requests_sent_total 0
# HELP dthrottle_resend_requests_received_total Peers' requests for messages of this agent.
# TYPE dthrottle_resend_requests_received_total counter
dthrottle_resend_requests_received_total 0
# HELP dthrottle_resent_messages_total Report messages this agent published again on request.
# TYPE dthrottle_resent_messages_total counter
dthrottle_resent_messages_total 0
# HELP dthrottle_resent_bytes_total Bytes of report messages published again on request.
# TYPE dthrottle_resent_bytes_total counter
dthrottle_resent_bytes_total 0
# HELP dthrottle_report_stale_messages_total Report messages too old to charge (--report-max-age, or a partition's backlog): not debited.
# TYPE dthrottle_report_stale_messages_total counter
dthrottle_report_stale_messages_total 0
# HELP dthrottle_report_stale_hits_total Hits of stale report messages, not debited.
# TYPE dthrottle_report_stale_hits_total counter
dthrottle_report_stale_hits_total 0
# HELP dthrottle_debit_failures_total Report entries that could not be debited.
# TYPE dthrottle_debit_failures_total counter
dthrottle_debit_failures_total 1
# HELP dthrottle_report_messages_rejected_total Report messages rejected as invalid (nothing debited), by reason.
# TYPE dthrottle_report_messages_rejected_total counter
dthrottle_report_messages_rejected_total{reason="bad magic"} 3
dthrottle_report_messages_rejected_total{reason="truncated"} 1
# HELP dthrottle_report_messages_link_authenticated_total Signed messages accepted without the signature's check: their CurveZMQ connection is their sender's.
# TYPE dthrottle_report_messages_link_authenticated_total counter
dthrottle_report_messages_link_authenticated_total 0
# HELP dthrottle_ban_messages_sent_total Bans messages published to peers.
# TYPE dthrottle_ban_messages_sent_total counter
dthrottle_ban_messages_sent_total 7
# HELP dthrottle_ban_messages_received_total Bans messages received from peers.
# TYPE dthrottle_ban_messages_received_total counter
dthrottle_ban_messages_received_total 14
# HELP dthrottle_verified_messages_sent_total SYN cookies: verified sources messages published to peers.
# TYPE dthrottle_verified_messages_sent_total counter
dthrottle_verified_messages_sent_total 0
# HELP dthrottle_verified_sources_shared_total SYN cookies: sources verified here and told to the peers.
# TYPE dthrottle_verified_sources_shared_total counter
dthrottle_verified_sources_shared_total 0
# HELP dthrottle_verified_messages_received_total SYN cookies: verified sources messages received from peers.
# TYPE dthrottle_verified_messages_received_total counter
dthrottle_verified_messages_received_total 0
# HELP dthrottle_verified_sources_learned_total SYN cookies: peers' verified sources written into the verified map.
# TYPE dthrottle_verified_sources_learned_total counter
dthrottle_verified_sources_learned_total 0
# HELP dthrottle_verified_sources_refused_total SYN cookies: peers' verified sources past the period's budget for all peers, not written.
# TYPE dthrottle_verified_sources_refused_total counter
dthrottle_verified_sources_refused_total 0
# HELP dthrottle_verified_sources_refused_peer_total SYN cookies: verified sources of peers --peer-verified does not list, not written.
# TYPE dthrottle_verified_sources_refused_peer_total counter
dthrottle_verified_sources_refused_peer_total 0
# HELP dthrottle_verified_sources_refused_peer_cap_total SYN cookies: new verified sources of a peer at --peer-verified-max (or of all at --max-verified), not written.
# TYPE dthrottle_verified_sources_refused_peer_cap_total counter
dthrottle_verified_sources_refused_peer_cap_total 0
# HELP dthrottle_peer_ban_notices_total Peers' ban notices, by what became of them: learned, updated, lifted, stale (older than a lift or the ban held here), held (another origin's ban of the prefix is in force here), refused_cap (16,384 learned bans), refused_duration (over 30 days), refused_write, refused_peer (--peer-bans), refused_prefix (--peer-ban-min-prefix), refused_never_ban (a peer, hub or allowed address), refused_peer_cap (--peer-ban-max), refused_rate (--peer-ban-rate), refused_time (a set or lift time in the future or over 30 days ago), refused_origin (a lift of a ban the peer did not set), refused_tombstone (no room).
# TYPE dthrottle_peer_ban_notices_total counter
dthrottle_peer_ban_notices_total{result="learned"} 5
dthrottle_peer_ban_notices_total{result="updated"} 0
dthrottle_peer_ban_notices_total{result="lifted"} 2
dthrottle_peer_ban_notices_total{result="stale"} 0
dthrottle_peer_ban_notices_total{result="refused_cap"} 1
dthrottle_peer_ban_notices_total{result="refused_duration"} 0
dthrottle_peer_ban_notices_total{result="refused_write"} 0
dthrottle_peer_ban_notices_total{result="held"} 0
dthrottle_peer_ban_notices_total{result="refused_peer"} 0
dthrottle_peer_ban_notices_total{result="refused_prefix"} 0
dthrottle_peer_ban_notices_total{result="refused_never_ban"} 0
dthrottle_peer_ban_notices_total{result="refused_peer_cap"} 0
dthrottle_peer_ban_notices_total{result="refused_rate"} 0
dthrottle_peer_ban_notices_total{result="refused_time"} 0
dthrottle_peer_ban_notices_total{result="refused_origin"} 0
dthrottle_peer_ban_notices_total{result="refused_tombstone"} 0
# HELP dthrottle_peer_bans_clamped_total Peers' bans longer than --peer-ban-max-duration, cut to it.
# TYPE dthrottle_peer_bans_clamped_total counter
dthrottle_peer_bans_clamped_total 0
# HELP dthrottle_ban_tombstones Lifts remembered (this host's, announced; and the peers').
# TYPE dthrottle_ban_tombstones gauge
dthrottle_ban_tombstones 0
# HELP dthrottle_peer_up 1 if the peer was heard from recently (--down-after), else 0.
# TYPE dthrottle_peer_up gauge
dthrottle_peer_up{peer="h2"} 1
dthrottle_peer_up{peer="h3"} 0
# HELP dthrottle_peer_last_heard_age_seconds Seconds since the last message accepted from the peer.
# TYPE dthrottle_peer_last_heard_age_seconds gauge
dthrottle_peer_last_heard_age_seconds{peer="h2"} 1.5
dthrottle_peer_last_heard_age_seconds{peer="h3"} 12.25
# HELP dthrottle_peer_accepted_messages_total Messages accepted from the peer.
# TYPE dthrottle_peer_accepted_messages_total counter
dthrottle_peer_accepted_messages_total{peer="h2"} 490
dthrottle_peer_accepted_messages_total{peer="h3"} 490
# HELP dthrottle_peer_lost_messages_total Messages from the peer missing in sequence gaps.
# TYPE dthrottle_peer_lost_messages_total counter
dthrottle_peer_lost_messages_total{peer="h2"} 0
dthrottle_peer_lost_messages_total{peer="h3"} 4
# HELP dthrottle_peer_recovered_messages_total Of the lost messages, those resent and applied.
# TYPE dthrottle_peer_recovered_messages_total counter
dthrottle_peer_recovered_messages_total{peer="h2"} 0
dthrottle_peer_recovered_messages_total{peer="h3"} 0
# HELP dthrottle_peer_stale_messages_total Messages from the peer too old to charge.
# TYPE dthrottle_peer_stale_messages_total counter
dthrottle_peer_stale_messages_total{peer="h2"} 0
dthrottle_peer_stale_messages_total{peer="h3"} 0
# HELP dthrottle_peer_duplicate_messages_total Duplicate or replayed messages from the peer.
# TYPE dthrottle_peer_duplicate_messages_total counter
dthrottle_peer_duplicate_messages_total{peer="h2"} 0
dthrottle_peer_duplicate_messages_total{peer="h3"} 6
# HELP dthrottle_peer_restarts_total Restarts of the peer's agent seen (new boot id).
# TYPE dthrottle_peer_restarts_total counter
dthrottle_peer_restarts_total{peer="h2"} 0
dthrottle_peer_restarts_total{peer="h3"} 1
)";

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MetricsRender, ExactTextSingleHost) {
  EXPECT_EQ(dt::render_metrics(fixed_info(), fixed_maps(), dt::MetricsSnapshot{}, kNow), kSingleHost);
}

// A byte budget (--rate 100kB/s --burst 15kB): dthrottle_info says unit="bytes".
TEST(MetricsRender, ByteBudgetInfo) {
  dt::MetricsInfo info = fixed_info();
  info.rate = 100000;
  info.burst = 15000;
  info.bytes = true;
  const std::string text = dt::render_metrics(info, fixed_maps(), dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_info{version=\"0.1.0\",node_id=\"edge-1\",interface=\"eth0\",rate=\"1e+05\","
                      "burst=\"15000\",xdp_mode=\"native\",unit=\"bytes\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(MetricsRender, ExactTextCluster) {
  std::string text = dt::render_metrics(fixed_info(), fixed_maps(), fixed_cluster(), kNow);
  ASSERT_EQ(text.substr(0, sizeof kSingleHost - 1), kSingleHost) << "the dataplane part differs";
  EXPECT_EQ(text.substr(sizeof kSingleHost - 1), kClusterPart);
}

TEST(MetricsRender, EscapesLabelValues) {
  EXPECT_EQ(dt::escape_label_value("plain-id.1"), "plain-id.1");
  EXPECT_EQ(dt::escape_label_value("a\"b"), "a\\\"b");
  EXPECT_EQ(dt::escape_label_value("a\\b"), "a\\\\b");
  EXPECT_EQ(dt::escape_label_value("a\nb"), "a\\nb");
  EXPECT_EQ(dt::escape_label_value("\\\"\n"), "\\\\\\\"\\n");

  dt::MetricsInfo info = fixed_info();
  info.iface = "we\"ird\\if";
  dt::MetricsSnapshot snap = fixed_cluster();
  snap.counters.rejected = {{"line\nbreak", 1}};
  std::string text = dt::render_metrics(info, fixed_maps(), snap, kNow);
  EXPECT_NE(text.find("interface=\"we\\\"ird\\\\if\""), std::string::npos) << text;
  EXPECT_NE(text.find("dthrottle_report_messages_rejected_total{reason=\"line\\nbreak\"} 1\n"), std::string::npos)
      << text;
}

// Every line is a HELP or TYPE comment or a sample `name{labels} value`; every sample
// follows its family's TYPE; counters end in _total; no series appears twice.
TEST(MetricsRender, EveryLineIsExpositionFormat) {
  dt::MetricsInfo info = fixed_info();
  info.node_id = "odd\"node\\";
  std::string text = dt::render_metrics(info, fixed_maps(), fixed_cluster(), kNow);
  const std::regex comment(R"(# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+))");
  const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})? (-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?|NaN|[+-]Inf))");
  std::string family, type;
  std::set<std::string> helped, series;
  size_t samples = 0;
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  for (const auto &line : lines_of(text)) {
    std::smatch m;
    if (std::regex_match(line, m, comment)) {
      if (m[1] == "HELP") {
        EXPECT_TRUE(helped.insert(m[2]).second) << "two HELP lines for " << m[2];
        family = m[2];
      } else {
        EXPECT_EQ(m[2], family) << "TYPE without its HELP: " << line;
        type = m[3];
        EXPECT_TRUE(type == "counter" || type == "gauge") << line;
        if (type == "counter") {
          EXPECT_TRUE(family.ends_with("_total")) << "counter not named _total: " << family;
        }
      }
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, m, sample)) << "not exposition format: " << line;
    EXPECT_EQ(m[1], family) << "sample outside its family: " << line;
    EXPECT_TRUE(series.insert(std::string(m[1]) + std::string(m[2])).second) << "duplicate series: " << line;
    samples++;
  }
  EXPECT_EQ(samples, 102u);
}

TEST(MetricsRender, NamedRulesHaveTheirOwnSeries) {
  dt::MapView m = fixed_maps();
  m.rules = {{"default", 10, 2}, {"web-syn", 5, 7, 40}, {"office", 3, 0}};
  const std::string text = dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_rule_packets_total{rule=\"web-syn\",verdict=\"would_drop\"} 40\n"), std::string::npos)
      << "a rule in dry run: its would-drops\n"
      << text;
  EXPECT_NE(text.find("dthrottle_rule_packets_total{rule=\"office\",verdict=\"would_drop\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("dthrottle_rule_packets_total{rule=\"web-syn\",verdict=\"dropped\"} 7\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dthrottle_rule_packets_total{rule=\"office\",verdict=\"passed\"} 3\n"), std::string::npos);
  EXPECT_EQ(text.find("dthrottle_rule_packets_total{rule=\"default\",verdict=\"passed\"} 1200"), std::string::npos)
      << "with named rules, default's series is its own counter, not the global one";
}

TEST(MetricsRender, RulesKeyedByDestinationSaySo) {
  dt::MapView m = fixed_maps();
  m.rules = {{"default", 10, 2}, {"vip", 5, 7}};
  EXPECT_EQ(dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow).find("dthrottle_rule_key_by"),
            std::string::npos)
      << "no rule keyed by destination: no family";
  m.dest_rules = {"vip"};
  const std::string text = dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_rule_key_by{rule=\"vip\",key_by=\"destination\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dthrottle_rule_key_by{rule=\"default\",key_by=\"source\"} 1\n"), std::string::npos) << text;
}

TEST(MetricsRender, ByteRulesHaveTheirBytes) {
  dt::MapView m = fixed_maps();
  EXPECT_EQ(dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow).find("dthrottle_rule_bytes_total"),
            std::string::npos)
      << "no byte rule: no family";
  m.default_bytes.bytes_passed = 5000, m.default_bytes.bytes_dropped = 70000;
  std::string text = dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_rule_bytes_total{rule=\"default\",verdict=\"dropped\"} 70000\n"), std::string::npos)
      << "a byte --rate/--burst without rules: rule default's bytes\n"
      << text;
  m.rules = {{"web", 10, 2}, {"video", 5, 7}};
  m.rules[1].bytes_passed = 123456;
  text = dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_rule_bytes_total{rule=\"video\",verdict=\"passed\"} 123456\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("dthrottle_rule_bytes_total{rule=\"web\""), std::string::npos)
      << "a packet rule has no bytes series";
}

TEST(MetricsRender, ListsHaveTheirCountersOnceLoaded) {
  dt::MapView m = fixed_maps();
  EXPECT_EQ(dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow).find("dthrottle_list"), std::string::npos)
      << "no list was ever loaded: no list family at all";
  m.lists = dt_list_stats{3, 7, 2};
  m.list_prefixes[DT_LIST_DENY] = 1000000;
  const std::string text = dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_list_packets_total{list=\"allow\",verdict=\"passed\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("dthrottle_list_packets_total{list=\"deny\",verdict=\"dropped\"} 7\n"), std::string::npos);
  EXPECT_NE(text.find("dthrottle_list_packets_total{list=\"deny\",verdict=\"would_drop\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("dthrottle_list_prefixes{list=\"deny\"} 1000000\n"), std::string::npos);
  EXPECT_NE(text.find("dthrottle_list_prefixes{list=\"allow\"} 0\n"), std::string::npos);
}

TEST(MetricsRender, CaptureCountsOnceSampled) {
  dt::MapView m = fixed_maps();
  EXPECT_EQ(dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow).find("dthrottle_capture"),
            std::string::npos)
      << "nothing was ever captured: no capture family at all";
  m.capture.captured = 20;
  m.capture.sampled_out = 9000;
  m.capture.ring_full = 1;
  const std::string text = dt::render_metrics(fixed_info(), m, dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("dthrottle_capture_packets_total{outcome=\"captured\"} 20\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dthrottle_capture_packets_total{outcome=\"sampled_out\"} 9000\n"), std::string::npos);
  EXPECT_NE(text.find("dthrottle_capture_packets_total{outcome=\"ring_full\"} 1\n"), std::string::npos);
}

TEST(MetricsRender, AdaptiveRulesHaveFactorLimitAndSignals) {
  dt::MetricsSnapshot snap;
  snap.adaptive.push_back({dt::AdaptiveKind::Packet, "api", 3, 200, 0.5, 0.25, "h2", 180, 7, 2, true});
  snap.adaptive.push_back({dt::AdaptiveKind::Tag, "user:\"x", 0, 10, 1, 1, "", 0, 0, 0, true});
  const std::string text = dt::render_metrics(fixed_info(), fixed_maps(), snap, kNow);
  for (const char *want : {
           "dthrottle_adaptive_factor{kind=\"rule\",name=\"api\"} 0.25\n",
           "dthrottle_adaptive_limit{kind=\"rule\",name=\"api\"} 50\n",
           "dthrottle_adaptive_own_factor{kind=\"rule\",name=\"api\"} 0.5\n",
           "dthrottle_adaptive_busiest_rate{kind=\"rule\",name=\"api\"} 180\n",
           "dthrottle_adaptive_busy_signals_total{kind=\"rule\",name=\"api\"} 7\n",
           "dthrottle_adaptive_decreases_total{kind=\"rule\",name=\"api\"} 2\n",
           "dthrottle_adaptive_factor{kind=\"tag\",name=\"user:\\\"x\"} 1\n",
       })
    EXPECT_NE(text.find(want), std::string::npos) << "missing: " << want << "in:\n" << text;
  EXPECT_EQ(dt::render_metrics(fixed_info(), fixed_maps(), dt::MetricsSnapshot{}, kNow).find("adaptive"),
            std::string::npos)
      << "no adaptive rule, no adaptive family";
}

TEST(MetricsRender, FillRatioWithoutCapacityIsZero) {
  dt::MetricsInfo info = fixed_info();
  info.capacity = 0;
  std::string text = dt::render_metrics(info, fixed_maps(), dt::MetricsSnapshot{}, kNow);
  EXPECT_NE(text.find("\ndthrottle_source_table_fill_ratio 0\n"), std::string::npos) << text;
}

TEST(MetricsRender, EventCountersOnceTheAgentHasEvents) {
  dt::MetricsSnapshot snap;
  EXPECT_EQ(dt::render_metrics(fixed_info(), fixed_maps(), snap, kNow).find("dthrottle_event"), std::string::npos);
  snap.events = true;
  snap.event_counters.emitted = 7;
  snap.event_counters.command_ok = 5;
  snap.event_counters.stream_delivered = 6;
  snap.event_counters.command_dropped = 2;
  snap.event_counters.command_timeouts = 1;
  snap.event_counters.subscribers = 1;
  const std::string text = dt::render_metrics(fixed_info(), fixed_maps(), snap, kNow);
  for (const char *line :
       {"\ndthrottle_events_total 7\n", "\ndthrottle_event_deliveries_total{sink=\"command\"} 5\n",
        "\ndthrottle_event_deliveries_total{sink=\"stream\"} 6\n",
        "\ndthrottle_events_dropped_total{reason=\"queue_full\"} 2\n",
        "\ndthrottle_event_command_failures_total{reason=\"timeout\"} 1\n", "\ndthrottle_event_subscribers 1\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
}

TEST(MetricsEviction, EstimateNeverDecreases) {
  dt::EvictionEstimate e;
  EXPECT_EQ(e.update(100, 100), 0u);  // nothing evicted
  EXPECT_EQ(e.update(90, 95), 0u);    // present read after more creations: not negative
  EXPECT_EQ(e.update(150, 100), 50u);
  EXPECT_EQ(e.update(160, 140), 50u);  // a lower reading keeps the counter where it was
  EXPECT_EQ(e.update(300, 100), 200u);
}

TEST(MetricsAddress, ParsesNumericAddresses) {
  dt::MetricsAddress a;
  std::string err;
  ASSERT_TRUE(dt::parse_metrics_address("127.0.0.1:9100", &a, &err)) << err;
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9100);
  ASSERT_TRUE(dt::parse_metrics_address("0.0.0.0:65535", &a, &err)) << err;
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 65535);
  ASSERT_TRUE(dt::parse_metrics_address("[::1]:9100", &a, &err)) << err;
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 9100);
  ASSERT_TRUE(dt::parse_metrics_address("[2001:2::2]:1", &a, &err)) << err;
  EXPECT_EQ(a.host, "2001:2::2");
}

TEST(MetricsAddress, RejectsWhatIsNotAnAddressAndPort) {
  for (const char *bad :
       {"", "localhost:9100", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:91x", "::1:9100",
        "[::1]9100", "[::1]:", "[127.0.0.1]:9100", "256.0.0.1:9100", "127.0.0.1:-1"}) {
    dt::MetricsAddress a;
    std::string err;
    EXPECT_FALSE(dt::parse_metrics_address(bad, &a, &err)) << "accepted '" << bad << "'";
    EXPECT_NE(err.find(std::string("'") + bad + "'"), std::string::npos) << "error does not name the value: " << err;
  }
}

}  // namespace
