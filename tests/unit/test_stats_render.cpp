// test_stats_render.cpp - `agent stats` (table and JSON) and the agent's status files as JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/cluster_status.h"
#include "commands/stats_render.h"
#include "common/address.h"
#include "common/json.h"
#include "daemon/adaptive_driver.h"

namespace {

using dt::Json;

constexpr uint64_t kSecond = 1'000'000'000;
// Every character JSON must escape, and a byte below 0x20 besides the newline.
const std::string kAwkward = "a\"b\\c\nd\te\x01z";

dt_policy throttle_policy(uint64_t per_second, uint64_t burst) {
  dt_policy p{};
  p.interval_ns = kSecond / per_second;
  p.burst_ns = burst * p.interval_ns;
  p.action = DT_ACT_THROTTLE;
  return p;
}

dt::SourceRow source(const char *addr, uint32_t rule, uint64_t passed, uint64_t dropped, uint64_t seen_ns) {
  dt::SourceRow r{};
  EXPECT_TRUE(dt::key_from_string(addr, &r.key)) << addr;
  r.key.rule = rule;
  r.b.rule = rule;
  r.b.passed = passed;
  r.b.dropped = dropped;
  r.b.last_seen_ns = seen_ns;
  return r;
}

// Rule 0 "default" at 100/s burst 20, rule 1 `rule1_name` denies; three sources.
dt::StatsSnapshot sample_snapshot(const std::string &rule1_name = "blocked") {
  dt::StatsSnapshot s;
  s.taken_ns = 50 * kSecond;
  s.policy = throttle_policy(100, 20);
  dt_policy deny{};
  deny.action = DT_ACT_DENY;
  s.policies = {s.policy, deny};
  s.rules = {{0, "default", s.policy, 700, 300}, {1, rule1_name, deny, 0, 9}};
  s.counters.passed = 700;
  s.counters.dropped = 309;
  s.counters.new_sources = 3;
  s.counters.denied = 9;
  s.sources = {source("198.18.1.2", 0, 200, 0, 49 * kSecond), source("198.18.1.1", 0, 500, 300, 48 * kSecond),
               source("2001:2::1", 1, 0, 9, 0)};
  // .1 has spent its burst until 1 s from now: -100 tokens at 100/s.
  s.sources[1].b.tat_ns = s.taken_ns + kSecond + s.policy.burst_ns;
  return s;
}

dt::StatsOptions options(const std::string &pin_dir, uint64_t top) {
  dt::StatsOptions o;
  o.pin_dir = pin_dir;
  o.json = true;
  o.top = top;
  return o;
}

// The keys of a JSON object, in document order.
std::vector<std::string> keys_of(const Json &obj) {
  std::vector<std::string> keys;
  for (const auto &[k, v] : obj.items()) keys.push_back(k);
  return keys;
}

Json parse_or_fail(const std::string &text) {
  Json j = Json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not valid JSON: " << text;
  return j;
}

TEST(StatsJson, HoldsEveryFieldInTheOrderReadersExpect) {
  const std::string out = dt::render_stats_json(sample_snapshot(), options("/sys/fs/bpf/dthrottle/eth0", 0), {});
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n') << "one line, ended";
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "more than one line: " << out;
  const Json j = parse_or_fail(out);
  EXPECT_EQ(keys_of(j), (std::vector<std::string>{"pin_dir", "policy", "sources_total", "dry_run", "counters", "lists",
                                                  "capture", "sources", "rules"}))
      << "no agent status given, so no cluster or adaptive";
  EXPECT_EQ(j["lists"].dump(), R"({"allow":{"prefixes_v4":0,"prefixes_v6":0,"passed":0},)"
                               R"("deny":{"prefixes_v4":0,"prefixes_v6":0,"dropped":0,"would_drop":0}})")
      << "the lists' object is there without lists too (docs/lists.md)";
  EXPECT_EQ(j["pin_dir"], "/sys/fs/bpf/dthrottle/eth0");
  EXPECT_EQ(j["policy"].dump(), R"({"rate":100,"burst":20,"interval_ns":10000000,"unit":"packets"})")
      << "a whole rate is printed as an integer, as before";
  EXPECT_EQ(j["sources_total"], 3);
  EXPECT_EQ(keys_of(j["counters"]), (std::vector<std::string>{"passed",           "dropped",
                                                              "would_drop",       "new_sources",
                                                              "parse_errors",     "non_ip",
                                                              "fail_open",        "contended",
                                                              "debit_hits",       "nd_exempt",
                                                              "exempt",           "allowed",
                                                              "denied",           "ban_dropped",
                                                              "ban_would_drop",   "ban_expired",
                                                              "cookie_sent",      "cookie_would_send",
                                                              "cookie_ack_valid", "cookie_ack_invalid",
                                                              "verified_hits"}));
  EXPECT_EQ(j["dry_run"].dump(), R"({"all":false,"rules":[]})") << "enforcing";
  EXPECT_EQ(j["counters"]["dropped"], 309);
  EXPECT_EQ(j["counters"]["denied"], 9);

  ASSERT_EQ(j["sources"].size(), 3u);
  const Json &first = j["sources"][0];
  EXPECT_EQ(keys_of(first),
            (std::vector<std::string>{"source", "prefix_len", "rule", "passed", "dropped", "would_drop", "debited",
                                      "tokens", "last_seen_ago_s", "unit", "prefix_bucket", "key_by"}));
  EXPECT_EQ(first["source"], "198.18.1.1") << "most dropped first";
  EXPECT_EQ(first["prefix_len"], 32);
  EXPECT_EQ(first["rule"], "default");
  EXPECT_EQ(first["dropped"], 300);
  EXPECT_DOUBLE_EQ(first["tokens"].get<double>(), -100.0);
  EXPECT_DOUBLE_EQ(first["last_seen_ago_s"].get<double>(), 2.0);
  EXPECT_EQ(j["sources"][1]["source"], "2001:2::1") << "then the next most dropped";
  EXPECT_EQ(j["sources"][1]["prefix_len"], 128);
  EXPECT_EQ(j["sources"][1]["rule"], "blocked");
  EXPECT_EQ(j["sources"][1]["last_seen_ago_s"], 0.0) << "never seen: 0";
  EXPECT_EQ(j["sources"][2]["source"], "198.18.1.2");

  ASSERT_EQ(j["rules"].size(), 2u);
  EXPECT_EQ(
      j["rules"][0].dump(),
      R"({"id":0,"name":"default","action":"throttle","rate":100,"burst":20,"passed":700,"dropped":300,)"
      R"("would_drop":0,"dry_run":false,"unit":"packets","key_by":"source","prefix_limits":[],"cidr":null,"when":null,)"
      R"("conditions":null})")
      << "the default rule: no prefix, no conditions";
  EXPECT_EQ(
      j["rules"][1].dump(),
      R"({"id":1,"name":"blocked","action":"deny","rate":0,"burst":0,"passed":0,"dropped":9,"would_drop":0,)"
      R"("dry_run":false,"unit":"packets","key_by":"source","prefix_limits":[],"cidr":null,"when":null,"conditions":null})");
}

// A rule with conditions beside its cidr (docs/rules.md "Conditions"): its prefix and what it
// needs of a packet, in --json and as a `when` line under it in the text table.
TEST(StatsJson, RuleConditions) {
  dt::StatsSnapshot s = sample_snapshot("ntp");
  dt::RuleRow &r = s.rules[1];
  r.has_match = r.has_cond = true;
  r.cidr = "198.18.0.0/15";
  r.match.rule = 1;
  r.match.proto = 17;
  r.match.flags = DT_MATCH_SPORT | DT_MATCH_DST;
  r.match.sport_lo = r.match.sport_hi = 123;
  r.cond.dst[10] = r.cond.dst[11] = 0xff;
  r.cond.dst[12] = 203, r.cond.dst[13] = 0, r.cond.dst[14] = 113;
  for (int i = 0; i < 15; i++) r.cond.dst_mask[i] = 0xff;
  const Json j = parse_or_fail(dt::render_stats_json(s, options("/p", 1), {}));
  EXPECT_EQ(j["rules"][1]["cidr"], "198.18.0.0/15");
  EXPECT_EQ(j["rules"][1]["when"], "udp sport 123 dst 203.0.113.0/24");
  EXPECT_EQ(j["rules"][1]["conditions"].dump(), R"({"proto":"udp","sport":"123","dst":"203.0.113.0/24"})");
  const std::string text = dt::render_stats_text(s, options("/p", 1), {});
  EXPECT_NE(
      text.find("  ntp                      deny                -          -            0            9            0\n"
                "    when udp sport 123 dst 203.0.113.0/24\n"),
      std::string::npos)
      << text;
}

TEST(StatsKeyBy, DestinationBucketsShownAsDst) {
  dt::StatsSnapshot s = sample_snapshot();
  dt_policy vip = throttle_policy(1000, 100);
  vip.flags |= DT_POL_KEY_DEST;
  vip.v4_key_bits = 32;
  s.policies.push_back(vip);
  s.rules.push_back({2, "vip", vip, 40, 960});
  s.sources.push_back(source("198.18.200.7", 2 | DT_KEY_DEST, 40, 960, 50 * kSecond));
  s.sources.back().b.tat_ns = s.taken_ns + vip.burst_ns;  // empty
  const std::string text = dt::render_stats_text(s, options("/p", 0), {});
  const size_t row = text.find("\n  dst 198.18.200.7 ");
  ASSERT_NE(row, std::string::npos) << "the destination's bucket shown as dst ADDR\n" << text;
  const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find(" vip "), std::string::npos) << "under its rule's name: " << line;
  EXPECT_NE(text.find("  vip (per dst) "), std::string::npos) << text;
  const Json j = parse_or_fail(dt::render_stats_json(s, options("/p", 0), {}));
  const Json &first = j["sources"][0];
  EXPECT_EQ(first["source"], "198.18.200.7") << "most dropped first";
  EXPECT_EQ(first["key_by"], "destination");
  EXPECT_EQ(first["rule"], "vip");
  EXPECT_DOUBLE_EQ(first["tokens"].get<double>(), 0.0) << "counted under its rule's policy, not the default's";
  EXPECT_EQ(j["sources"][1]["key_by"], "source");
  EXPECT_EQ(j["rules"][2]["key_by"], "destination");
}

TEST(StatsJson, TopLimitsTheSourcesButNotTheirTotal) {
  const Json j = parse_or_fail(dt::render_stats_json(sample_snapshot(), options("/p", 1), {}));
  ASSERT_EQ(j["sources"].size(), 1u);
  EXPECT_EQ(j["sources"][0]["source"], "198.18.1.1");
  EXPECT_EQ(j["sources_total"], 3);
}

TEST(StatsJson, FloatsKeepThePrintedDigits) {
  dt::StatsSnapshot s = sample_snapshot();
  s.policy.interval_ns = 3;                              // 333333333.33/s: %.9g keeps 9 digits
  s.sources[1].b.last_seen_ns = s.taken_ns - 1'234'567;  // 0.001234567 s: %.3f keeps 0.001
  const std::string out = dt::render_stats_json(s, options("/p", 0), {});
  EXPECT_NE(out.find(R"("policy":{"rate":333333333,)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("last_seen_ago_s":0.001,)"), std::string::npos) << out;
}

TEST(StatsJson, AwkwardPinDirectoryAndRuleNameRoundTrip) {
  const std::string pin_dir = "/sys/fs/bpf/" + kAwkward;
  const std::string out = dt::render_stats_json(sample_snapshot(kAwkward), options(pin_dir, 0), {});
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "a newline in a string must be escaped: " << out;
  const Json j = parse_or_fail(out);
  EXPECT_EQ(j["pin_dir"], pin_dir);
  EXPECT_EQ(j["rules"][1]["name"], kAwkward);
  EXPECT_EQ(j["sources"][1]["rule"], kAwkward) << "a source's rule is named the same way";
}

TEST(StatsJson, NonUtf8PinDirectoryStillGivesValidJson) {
  const Json j = parse_or_fail(dt::render_stats_json(sample_snapshot(), options("/p/\xff\xfe", 0), {}));
  EXPECT_EQ(j["pin_dir"], "/p/\xEF\xBF\xBD\xEF\xBF\xBD") << "each bad byte becomes U+FFFD";
}

TEST(StatsJson, EmbedsTheAgentsStatusDocuments) {
  dt::AgentStatusFiles status;
  status.cluster = R"({"node_id":"h1","epoch":7,"peers":[]})";
  status.adaptive = R"([{"kind":"rule","name":"svc","factor":0.5}])";
  const std::string out = dt::render_stats_json(sample_snapshot(), options("/p", 0), status);
  const Json j = parse_or_fail(out);
  EXPECT_EQ(keys_of(j).back(), "adaptive") << "cluster, then adaptive, after the rules";
  EXPECT_EQ(j["cluster"].dump(), status.cluster) << "embedded as parsed, keys in their order";
  EXPECT_EQ(j["adaptive"].dump(), status.adaptive);
  EXPECT_NE(out.find(R"("adaptive":[{"kind":"rule","name":"svc")"), std::string::npos)
      << "test_adaptive.sh greps for this: " << out;
}

TEST(StatsJson, LeavesOutAStatusFileThatDoesNotParse) {
  dt::AgentStatusFiles status;
  status.cluster = R"({"node_id":"h1","epoch":)";  // cut short
  status.adaptive = "[]";
  const Json j = parse_or_fail(dt::render_stats_json(sample_snapshot(), options("/p", 0), status));
  EXPECT_FALSE(j.contains("cluster")) << "a broken file is left out, as a missing one is";
  ASSERT_TRUE(j.contains("adaptive"));
  EXPECT_EQ(j["adaptive"], Json::array());
}

TEST(StatsText, TableOfPolicyCountersRulesAndSources) {
  dt::AgentStatusFiles status;
  status.adaptive = "adaptive rules:\n  (table)";
  status.cluster = "cluster: node h1";
  dt::StatsOptions opt = options("/p", 2);
  opt.json = false;
  const std::string out = dt::render_stats_text(sample_snapshot(), opt, status);
  const std::string want =
      "dthrottle maps in /p\n"
      "policy: rate 100/s, burst 20 per source\n"
      "counters:\n"
      "  passed                     700\n"
      "  dropped                    309\n"
      "  would-drop                   0\n"
      "  sources                      3\n"
      "  new sources                  3\n"
      "  malformed                    0\n"
      "  non-IP                       0\n"
      "  fail-open                    0\n"
      "  contended                    0\n"
      "  debited hits                 0\n"
      "  IPv6 ND                      0\n"
      "  exempt                       0\n"
      "  allowed                      0\n"
      "  denied                       9\n"
      "  banned                       0\n"
      "  ban would-drop               0\n"
      "  ban expired                  0\n"
      "  cookies sent                 0\n"
      "  cookies would-send           0\n"
      "  cookie ACKs valid            0\n"
      "  cookie ACKs invalid          0\n"
      "  verified hits                0\n"
      "\n"
      "rules:\n"
      "  RULE                     ACTION         RATE/S      BURST       PASSED      DROPPED   WOULD-DROP\n"
      "  default                  throttle          100         20          700          300            0\n"
      "  blocked                  deny                -          -            0            9            0\n"
      "\n"
      "adaptive rules:\n"
      "  (table)\n"
      "\n"
      "cluster: node h1\n"
      "\n"
      "top 2 sources by drops:\n"
      "  SOURCE                                      RULE                   PASSED      DROPPED   WOULD-DROP    DEBITED"
      "       TOKENS   SEEN AGO\n"
      "  198.18.1.1                                  default                   500          300            0          0"
      "     -100.000       2.0s\n"
      "  2001:2::1                                   blocked                     0            9            0          0"
      "        0.000          -\n";
  EXPECT_EQ(out, want);
}

// Rule 1 (deny) in dry run: a plain line names it, its would-drops show per rule, per
// source and in total, and a source that would have been dropped ranks as dropped.
dt::StatsSnapshot dry_run_snapshot() {
  dt::StatsSnapshot s = sample_snapshot();
  s.policies[1].flags = DT_POL_DRY_RUN;
  s.rules[1].policy.flags = DT_POL_DRY_RUN;
  s.rules[1].dropped = 0;
  s.rules[1].would_drop = 400;
  s.would_drop = 400;
  s.counters.denied = 0;
  s.counters.dropped = 300;
  s.sources[2].b.dropped = 0;
  s.sources[2].b.would_drop = 400;
  return s;
}

TEST(StatsText, SaysWhichRulesAreInDryRun) {
  dt::StatsOptions opt = options("/p", 1);
  opt.json = false;
  const std::string out = dt::render_stats_text(dry_run_snapshot(), opt, {});
  EXPECT_NE(out.find("policy: rate 100/s, burst 20 per source\n"
                     "dry run: rule blocked (they drop nothing; would-drop counts what they would drop)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  would-drop                 400\n"), std::string::npos) << out;
  EXPECT_NE(
      out.find("  blocked (dry run)        deny                -          -            0            0          400\n"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("top 1 sources by drops:"), std::string::npos) << out;
  EXPECT_NE(out.find("  2001:2::1  "), std::string::npos) << "400 would-drops outrank 300 drops\n" << out;

  dt::StatsSnapshot all = dry_run_snapshot();
  all.rules[0].policy.flags = DT_POL_DRY_RUN;
  EXPECT_NE(dt::render_stats_text(all, opt, {}).find("dry run: every rule (nothing is dropped; "), std::string::npos);
  EXPECT_EQ(dt::render_stats_text(sample_snapshot(), opt, {}).find("dry run"), std::string::npos) << "enforcing";
}

TEST(StatsJson, SaysWhichRulesAreInDryRun) {
  const Json j = parse_or_fail(dt::render_stats_json(dry_run_snapshot(), options("/p", 0), {}));
  EXPECT_EQ(j["dry_run"].dump(), R"({"all":false,"rules":["blocked"]})");
  EXPECT_EQ(j["counters"]["would_drop"], 400);
  EXPECT_EQ(j["rules"][1]["would_drop"], 400);
  EXPECT_EQ(j["rules"][1]["dry_run"], true);
  EXPECT_EQ(j["sources"][0]["source"], "2001:2::1") << "would-drops rank as drops";
  EXPECT_EQ(j["sources"][0]["would_drop"], 400);
  dt::StatsSnapshot all = dry_run_snapshot();
  all.rules[0].policy.flags = DT_POL_DRY_RUN;
  EXPECT_EQ(parse_or_fail(dt::render_stats_json(all, options("/p", 0), {}))["dry_run"].dump(),
            R"({"all":true,"rules":["default","blocked"]})");
}

TEST(StatsText, SaysWhereTheProgramIsAttached) {
  dt::AgentStatusFiles status;
  status.hook = "tc ingress, tcx link";
  dt::StatsOptions opt = options("/p", 0);
  opt.json = false;
  const std::string out = dt::render_stats_text(sample_snapshot(), opt, status);
  EXPECT_EQ(out.rfind("dthrottle maps in /p\nattached: tc ingress, tcx link\npolicy: ", 0), 0u) << out;
  const Json j = parse_or_fail(dt::render_stats_json(sample_snapshot(), options("/p", 0), status));
  EXPECT_EQ(j["attached"], "tc ingress, tcx link");
  EXPECT_EQ(keys_of(j)[1], "attached") << "right after pin_dir";
  // Nothing recorded (no agent attached it, or it was detached): no line, no key.
  const std::string none = dt::render_stats_text(sample_snapshot(), opt, {});
  EXPECT_EQ(none.find("attached:"), std::string::npos) << none;
  EXPECT_FALSE(parse_or_fail(dt::render_stats_json(sample_snapshot(), options("/p", 0), {})).contains("attached"));
}

TEST(StatsText, NoPolicyAndNoSources) {
  dt::StatsSnapshot s;
  dt::StatsOptions opt = options("/p", 0);
  opt.json = false;
  const std::string out = dt::render_stats_text(s, opt, {});
  EXPECT_NE(out.find("policy: none set (every packet passes, counted as fail-open)\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("rules:"), std::string::npos) << "no rules table without rules: " << out;
  EXPECT_EQ(out.find("sources by drops"), std::string::npos) << "no sources table without sources: " << out;
}

TEST(ClusterStatusJson, AwkwardNamesRoundTripAndCountersStayIntegers) {
  dt::ClusterStatusHead head{kAwkward, 1'700'000'000'123, 10 * kSecond, 42, 200'000'000};
  dt::ClusterCounters c;
  c.reports_sent = 5;
  c.rejected = {{"bad \"magic\"", 2}, {"short", 1}};
  c.ban_messages_received = 4;
  c.verified_learned = 6;
  c.bans.learned = 3;
  c.bans.rejected_duration = 1;
  std::map<std::string, dt::PeerState> peers;
  peers[kAwkward].up = true;
  peers[kAwkward].last_heard_ns = 9 * kSecond;
  peers[kAwkward].accepted = 12;
  peers["h2"].last_heard_ns = 4 * kSecond;
  const std::string out = dt::cluster_status_json(head, c, peers);
  EXPECT_EQ(out.find('\n'), std::string::npos) << "one line: " << out;
  const Json j = parse_or_fail(out);
  EXPECT_EQ(keys_of(j),
            (std::vector<std::string>{"node_id", "written_unix_ms", "epoch", "period_ms", "security", "counters",
                                      "rejected", "peers", "aggregates", "bans", "verified", "received_by_kind"}));
  EXPECT_EQ(j["node_id"], kAwkward);
  EXPECT_EQ(j["written_unix_ms"], 1'700'000'000'123u);
  EXPECT_EQ(j["epoch"], 42);
  EXPECT_EQ(j["period_ms"], 200);
  EXPECT_EQ(j["security"], "keys");
  EXPECT_EQ(j["counters"]["reports_sent"], 5);
  EXPECT_EQ(j["counters"]["rejected"], 3) << "the total of the reasons";
  EXPECT_EQ(
      keys_of(j["counters"]).size(),
      45u);  // 31 + cadence (5) + early reports (3) + join guard (2) + destination entries (1) + links (3)
  EXPECT_EQ(j["rejected"]["bad \"magic\""], 2);
  EXPECT_EQ(j["bans"]["messages_received"], 4);
  EXPECT_EQ(j["bans"]["learned"], 3);
  EXPECT_EQ(j["bans"]["refused_duration"], 1) << "a peer's ban refused as too long is shown";
  EXPECT_EQ(j["verified"]["learned"], 6) << "the peers' verified sources (SYN cookies) have an object of their own";
  EXPECT_EQ(keys_of(j["verified"]).size(), 13u);  // withdrawn too (a reload)
  ASSERT_EQ(j["peers"].size(), 2u);
  // Peers by node id: the awkward one ("a...") before "h2".
  EXPECT_EQ(j["peers"][0].dump(), Json({{"node_id", kAwkward},
                                        {"up", true},
                                        {"last_heard_ago_ms", 1000},
                                        {"accepted", 12},
                                        {"duplicates", 0},
                                        {"lost", 0},
                                        {"recovered", 0},
                                        {"stale", 0},
                                        {"last_age_ms", 0},
                                        {"restarts", 0},
                                        {"boot_rejected", 0}})
                                      .dump());
  EXPECT_EQ(j["peers"][1]["node_id"], "h2");
  EXPECT_EQ(j["peers"][1]["up"], false);
  EXPECT_EQ(j["peers"][1]["last_heard_ago_ms"], 6000);
}

TEST(ClusterStatusJson, NoPeersNoRejections) {
  const Json j = parse_or_fail(dt::cluster_status_json({"h1", 1, 0, 0, 200'000'000, "insecure"}, {}, {}));
  EXPECT_EQ(j["security"], "insecure");
  EXPECT_EQ(j["rejected"], Json::object()) << "an empty object, as before";
  EXPECT_EQ(j["peers"], Json::array()) << "an empty list, as before";
}

TEST(ClusterStatusText, EveryCounterOfTheTableOnItsLine) {
  dt::ClusterCounters c;
  c.stale_messages = 3;
  c.stale_hits = 7;
  c.rejected = {{"short", 2}};
  c.bans.rejected_cap = 1;
  c.bans.refused_prefix = 4;
  std::map<std::string, dt::PeerState> peers;
  peers["h2"].up = true;
  const std::string t = dt::cluster_status_text({"h1", 1, 0, 7, 200'000'000, "keys"}, c, peers);
  EXPECT_EQ(t.rfind("cluster: node h1, epoch 7, period 200 ms, 1 of 1 peers up, security keys\n", 0), 0u) << t;
  EXPECT_NE(t.find("\n  stale    3 messages, 7 hits not charged\n"), std::string::npos)
      << "docs/cluster.md quotes this line: " << t;
  EXPECT_NE(t.find(", 2 rejected"), std::string::npos) << "the total of the reasons: " << t;
  EXPECT_NE(t.find("\n  refused  1 cap, 0 duration, 0 write, 0 peer, 4 prefix,"), std::string::npos) << t;
  EXPECT_NE(t.find("\n  rejected short                2\n"), std::string::npos) << t;
  for (const dt::ClusterCounterRow &r : dt::kClusterCounterRows) {
    if (!*r.line) continue;
    EXPECT_NE(t.find("\n  " + std::string(r.line) + " "), std::string::npos) << r.line << ": " << t;
  }
}

TEST(ClusterStatusJson, BanCountersUnderTheirNoticeResultNames) {
  const Json j = parse_or_fail(dt::cluster_status_json({"h1", 1, 0, 0, 200'000'000}, {}, {}));
  size_t notices = 0;
  for (const dt::BanSyncCounterRow &r : dt::kBanSyncCounterRows) {
    EXPECT_TRUE(j["bans"].contains(r.name)) << r.name;
    notices += r.notice;
  }
  EXPECT_EQ(notices, 16u) << "docs/bans.md lists 16 results of dthrottle_peer_ban_notices_total";
  EXPECT_TRUE(j["bans"].contains("stale")) << "the documented name (metrics' result), not ignored_stale";
  EXPECT_FALSE(j["bans"].contains("ignored_stale"));
}

dt::AdaptiveStatus adaptive(dt::AdaptiveKind kind, const std::string &name, double rate, double factor) {
  dt::AdaptiveStatus s{};
  s.kind = kind;
  s.name = name;
  s.rate = rate;
  s.factor = factor;
  s.local_factor = factor;
  s.observed = 123.456;
  s.busy_signals = 4;
  s.cluster = true;
  return s;
}

TEST(AdaptiveStatusJson, AwkwardTagPrefixRoundTripsAndNumbersReadAsBefore) {
  std::vector<dt::AdaptiveStatus> all = {adaptive(dt::AdaptiveKind::Packet, "svc", 100, 0.5),
                                         adaptive(dt::AdaptiveKind::Tag, kAwkward, 2.5, 1.0)};
  all[0].lowest_from = kAwkward;  // a peer's node id
  all[1].cluster = false;
  const std::string out = dt::adaptive_status_json(all);
  EXPECT_EQ(out.find('\n'), std::string::npos) << "one line: " << out;
  EXPECT_EQ(out.rfind(R"([{"kind":"rule","name":"svc","rate":100,"factor":0.5,"limit":50,"own_factor":0.5,)", 0), 0u)
      << "test_adaptive.sh greps the rule's object by its first keys: " << out;
  const Json j = parse_or_fail(out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(keys_of(j[0]), (std::vector<std::string>{"kind", "name", "rate", "factor", "limit", "own_factor",
                                                     "lowest_from", "observed", "busy_signals", "decreases", "scope"}));
  EXPECT_EQ(j[0]["lowest_from"], kAwkward);
  EXPECT_EQ(j[0]["observed"], 123.456);
  EXPECT_EQ(j[0]["busy_signals"], 4);
  EXPECT_EQ(j[0]["scope"], "cluster");
  EXPECT_EQ(j[1]["kind"], "tag");
  EXPECT_EQ(j[1]["name"], kAwkward) << "the prefix comes back byte for byte (control characters included)";
  EXPECT_EQ(j[1]["rate"], 2.5);
  EXPECT_EQ(j[1]["scope"], "local");
  EXPECT_EQ(dt::adaptive_status_json({}), "[]") << "no adaptive rules: an empty list, as before";
}

TEST(PrintedNumber, ReadsAsPrintfPrintedIt) {
  EXPECT_EQ(dt::printed_number("%.9g", 100.0).dump(), "100");
  EXPECT_TRUE(dt::printed_number("%.9g", 100.0).is_number_integer()) << "whole numbers stay integers";
  EXPECT_EQ(dt::printed_number("%.9g", 1.0 / 3).dump(), "0.333333333");
  EXPECT_EQ(dt::printed_number("%.9g", 1e20).dump(), "1e+20");
  EXPECT_EQ(dt::printed_number("%.3f", 2.0 / 3).dump(), "0.667");
  EXPECT_EQ(dt::printed_number("%.3f", -100.0).dump(), "-100.0") << "%.3f text has a point: a float";
  EXPECT_EQ(dt::printed_number("%.6f", 0.5).dump(), "0.5");
  EXPECT_TRUE(dt::printed_number("%.9g", std::nan("")).is_null()) << "JSON has no NaN";
  EXPECT_TRUE(dt::printed_number("%.9g", INFINITY).is_null()) << "JSON has no infinity";
}

}  // namespace

namespace {

// A byte budget (rule 0 at 100 kB/s, burst 10 kB): shown in bytes, with "unit" in JSON.
TEST(StatsBytes, ByteRuleShownInBytes) {
  dt::StatsSnapshot s = sample_snapshot();
  s.policy = throttle_policy(100000, 10000);
  s.policy.flags = DT_POL_BYTES;
  s.policies[0] = s.policy;
  s.rules[0].policy = s.policy;
  s.sources[1].b.tat_ns = 0;  // a full bucket: 10000 bytes
  dt::AgentStatusFiles status;
  dt::StatsOptions opt = options("/p", 10);
  opt.json = false;
  const std::string text = dt::render_stats_text(s, opt, status);
  EXPECT_NE(text.find("policy: rate 100 kB/s, burst 10 kB per source (a byte budget)"), std::string::npos) << text;
  EXPECT_NE(text.find("throttle     100 kB/s      10 kB          700"), std::string::npos)
      << "the rules table's rate and burst (passed/dropped per rule stay packets):\n"
      << text;
  EXPECT_NE(text.find("10000.000"), std::string::npos) << "tokens in bytes:\n" << text;
  EXPECT_NE(text.find("(bytes)"), std::string::npos) << text;
  const Json j = Json::parse(dt::render_stats_json(s, options("/p", 10), status));
  EXPECT_EQ(j["policy"]["unit"], "bytes");
  EXPECT_EQ(j["rules"][0]["unit"], "bytes");
  EXPECT_EQ(j["rules"][1]["unit"], "packets");
  for (const auto &src : j["sources"])
    EXPECT_EQ(src["unit"], src["rule"] == "default" ? "bytes" : "packets") << src.dump();
}

}  // namespace
