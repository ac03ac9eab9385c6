// test_crowdsec_decisions.cpp - the CrowdSec decision stream read into bans (crowdsec/
// decisions.h, go_duration.h): answers recorded from Debian 12's LAPI (crowdsec 1.4.6),
// durations in Go's syntax, and every kind of bad input counted or refused, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "crowdsec/decisions.h"
#include "crowdsec/go_duration.h"

namespace {

using dt::BanPrefix;
using dt::StreamBatch;

// GET /v1/decisions/stream?startup=true&scopes=ip,range of crowdsec 1.4.6 after
// `cscli decisions add` (an Ip ban, an IPv6 captcha and ban, a Range ban with -R) and
// `cscli decisions delete` of two addresses: a startup answer lists expired ones as deleted.
const char kRecordedStartup[] =
    R"({"deleted":[{"duration":"-3m8.581753616s","id":1,"origin":"cscli","scenario":"manual 'ban' from )"
    R"('3d1219c7c4c5404aaa1f6d2a48adfda4XXCUw36yeCwDHXAN'","scope":"Ip","type":"ban","value":"198.18.0.77"},)"
    R"({"duration":"-2m48.74157205s","id":8,"origin":"cscli","scenario":"long","scope":"Ip","type":"ban",)"
    R"("value":"198.18.0.88"}],"new":[{"duration":"1m50.294587583s","id":4,"origin":"cscli","scenario":)"
    R"("manual 'captcha' from '3d1219c7c4c5404aaa1f6d2a48adfda4XXCUw36yeCwDHXAN'","scope":"Ip","type":"captcha",)"
    R"("value":"2001:2::5"},{"duration":"1m50.294585305s","id":5,"origin":"cscli","scenario":"manual 'ban' from )"
    R"('3d1219c7c4c5404aaa1f6d2a48adfda4XXCUw36yeCwDHXAN'","scope":"Ip","type":"ban","value":"2001:2::6"},)"
    R"({"duration":"1h56m46.294584831s","id":2,"origin":"cscli","scenario":"test reason","scope":"Range",)"
    R"("type":"ban","value":"198.18.5.0/24"}]})";

// The same LAPI's delta answers: nothing new, and a deletion.
const char kRecordedEmptyDelta[] = R"({"deleted":null,"new":null})";
const char kRecordedDeletion[] =
    R"({"deleted":[{"duration":"-14.67155ms","id":8,"origin":"cscli","scenario":"long","scope":"Ip","type":"ban",)"
    R"("value":"198.18.0.88"}],"new":null})";

BanPrefix prefix(const char *value, bool range = false) {
  BanPrefix p;
  EXPECT_TRUE(dt::parse_ban_value(value, range, &p)) << value;
  return p;
}

bool parse(const std::string &body, StreamBatch *out, std::string *err = nullptr, dt::StreamLimits limits = {}) {
  std::string e;
  const bool ok = dt::parse_decision_stream(body, limits, out, &e);
  if (err) *err = e;
  return ok;
}

TEST(CrowdsecDecisions, RecordedStartupGivesItsBans) {
  StreamBatch b;
  ASSERT_TRUE(parse(kRecordedStartup, &b));
  ASSERT_EQ(b.added.size(), 2u) << "the IPv6 ban and the range ban (the captcha is no ban)";
  EXPECT_EQ(dt::ban_prefix_text(b.added[0].prefix), "2001:2::6");
  EXPECT_EQ(b.added[0].duration_ns, 110'294'585'305);
  EXPECT_EQ(b.added[0].origin, "cscli");
  EXPECT_EQ(dt::ban_prefix_text(b.added[1].prefix), "198.18.5.0/24");
  EXPECT_EQ(b.added[1].duration_ns, (3600 + 56 * 60 + 46) * 1'000'000'000LL + 294'584'831);
  EXPECT_EQ(b.added[1].reason, "test reason");
  ASSERT_EQ(b.deleted.size(), 2u);
  EXPECT_EQ(b.deleted[0], prefix("198.18.0.77"));
  EXPECT_EQ(b.counts.other_type, 1u);
  EXPECT_EQ(b.counts.invalid, 0u);
}

TEST(CrowdsecDecisions, RecordedDeltas) {
  StreamBatch b;
  ASSERT_TRUE(parse(kRecordedEmptyDelta, &b));
  EXPECT_TRUE(b.added.empty() && b.deleted.empty());
  ASSERT_TRUE(parse(kRecordedDeletion, &b));
  ASSERT_EQ(b.deleted.size(), 1u);
  EXPECT_EQ(b.deleted[0], prefix("198.18.0.88"));
}

TEST(CrowdsecDecisions, ScopesAndTypesOtherThanBansAreCounted) {
  StreamBatch b;
  ASSERT_TRUE(parse(R"({"new":[
      {"duration":"1h","scope":"Country","type":"ban","value":"FR"},
      {"duration":"1h","scope":"username","type":"ban","value":"bob"},
      {"duration":"1h","scope":"ip","type":"throttle","value":"198.18.0.9"},
      {"duration":"1h","scope":"RANGE","type":"BAN","value":"2001:2::/48","scenario":""}]})",
                    &b));
  ASSERT_EQ(b.added.size(), 1u) << "scope and type match whatever their case";
  EXPECT_EQ(dt::ban_prefix_text(b.added[0].prefix), "2001:2::/48");
  EXPECT_EQ(b.counts.other_scope, 2u);
  EXPECT_EQ(b.counts.other_type, 1u);
}

TEST(CrowdsecDecisions, BadDecisionsAreCountedNotFatal) {
  StreamBatch b;
  ASSERT_TRUE(parse(R"({"new":[
      {"duration":"1h","scope":"Ip","type":"ban","value":"198.18.0.300"},
      {"duration":"1h","scope":"Ip","type":"ban","value":"198.18.0.0/24"},
      {"duration":"soon","scope":"Ip","type":"ban","value":"198.18.0.1"},
      {"duration":"-5s","scope":"Ip","type":"ban","value":"198.18.0.2"},
      {"duration":3600,"scope":"Ip","type":"ban","value":"198.18.0.3"},
      {"scope":"Ip","type":"ban"},
      {"duration":"1h","scope":["Ip"],"type":"ban","value":"198.18.0.4"},
      42, "text", null, [1,2],
      {"duration":"1h","scope":"Ip","type":"ban","value":"198.18.0.5","extra":{"deep":[[[{}]]]}}
    ], "other": {"ignored": true}})",
                    &b));
  ASSERT_EQ(b.added.size(), 1u) << "only the last decision is good (its extra field is skipped)";
  EXPECT_EQ(dt::ban_prefix_text(b.added[0].prefix), "198.18.0.5");
  EXPECT_EQ(b.counts.invalid, 11u);
  EXPECT_EQ(b.first_problem, "'198.18.0.300' is not an address");
}

TEST(CrowdsecDecisions, BodiesThatAreNoStreamAreRefused) {
  struct Case {
    const char *body, *error;
  } cases[] = {
      {"", "the response is not JSON"},
      {"{\"new\":[", "the response is not JSON"},
      {"<html>502 Bad Gateway</html>", "the response is not JSON"},
      {"[]", "the response is not a JSON object"},
      {"\"new\"", "the response is not a JSON object"},
      {R"({"new":{"a":1}})", "\"new\" is neither a list nor null"},
      {R"({"deleted":"x"})", "\"deleted\" is neither a list nor null"},
  };
  for (const auto &c : cases) {
    StreamBatch b;
    std::string err;
    EXPECT_FALSE(parse(c.body, &b, &err)) << c.body;
    EXPECT_EQ(err, c.error) << c.body;
  }
  StreamBatch b;
  EXPECT_TRUE(parse("{}", &b)) << "no list at all: nothing changed";
}

TEST(CrowdsecDecisions, DeepNestingIsSkippedWithoutRecursion) {
  const std::string deep = std::string(200'000, '[') + std::string(200'000, ']');
  StreamBatch b;
  std::string err;
  EXPECT_TRUE(parse(R"({"other":)" + deep + R"(,"new":[)" + deep + "]}", &b, &err)) << err;
  EXPECT_EQ(b.counts.invalid, 1u);
  EXPECT_FALSE(parse(deep, &b, &err));
}

TEST(CrowdsecDecisions, LimitsOnCountDurationAndReason) {
  std::string body = R"({"new":[)";
  for (int i = 0; i < 10; i++)
    body += std::string(i ? "," : "") + R"({"duration":"87600h","scope":"Ip","type":"ban","value":"198.18.1.)" +
            std::to_string(i) + R"(","scenario":")" + std::string(300, 'x') + "\\u00e9\\n\"}";
  body += "]}";
  dt::StreamLimits limits;
  limits.max_decisions = 4;
  limits.max_duration_ns = 3600'000'000'000;
  limits.max_reason_bytes = 301;
  StreamBatch b;
  ASSERT_TRUE(parse(body, &b, nullptr, limits));
  ASSERT_EQ(b.added.size(), 4u);
  EXPECT_EQ(b.counts.over_limit, 6u);
  EXPECT_EQ(b.added[0].duration_ns, 3600'000'000'000) << "ten years cut to the limit";
  EXPECT_EQ(b.added[0].reason, std::string(300, 'x')) << "cut before a split UTF-8 character";
  limits.max_reason_bytes = 400;
  ASSERT_TRUE(parse(body, &b, nullptr, limits));
  EXPECT_EQ(b.added[0].reason, std::string(300, 'x') + "\xc3\xa9?") << "a control character replaced";
}

TEST(CrowdsecDecisions, BanValues) {
  EXPECT_EQ(dt::ban_prefix_text(prefix("198.18.0.7")), "198.18.0.7");
  EXPECT_EQ(prefix("198.18.0.7").len, 32);
  EXPECT_FALSE(prefix("198.18.0.7").is_v6);
  EXPECT_EQ(dt::ban_prefix_text(prefix("198.18.5.9/24", true)), "198.18.5.0/24") << "host bits cleared";
  EXPECT_EQ(prefix("198.18.5.0/24", true).len, 24);
  EXPECT_EQ(prefix("198.18.0.7/32", true), prefix("198.18.0.7")) << "a /32 Range is the Ip's ban";
  EXPECT_EQ(dt::ban_prefix_text(prefix("2001:2::1/128", true)), "2001:2::1");
  BanPrefix p;
  for (const char *bad : {"0.0.0.0/0", "::/0", "198.18.0.0/33", "2001:2::/129", "198.18.0.0/", "198.18.0.0/-1", "198.18.0.0/2x", "",
                          "host.example", "198.18.0.0/24 "})
    EXPECT_FALSE(dt::parse_ban_value(bad, true, &p)) << bad;
  EXPECT_FALSE(dt::parse_ban_value("198.18.0.0/24", false, &p)) << "an Ip decision holds no length";
}

TEST(CrowdsecDecisions, GoDurations) {
  const int64_t max = INT64_MAX / 2;
  struct Case {
    const char *text;
    int64_t ns;
  } good[] = {
      {"0", 0},
      {"4h", 4 * 3'600'000'000'000},
      {"3h59m55.756182786s", ((3 * 60 + 59) * 60 + 55) * 1'000'000'000LL + 756'182'786},
      {"-19.77807ms", -19'778'070},
      {"1.5h", 5'400'000'000'000},
      {"2us", 2'000},
      {"2\xc2\xb5s", 2'000},
      {"7ns", 7},
      {"+1m", 60'000'000'000},
      {"0.000000000000000000001s", 0},
  };
  for (const auto &c : good) {
    int64_t ns = -1;
    EXPECT_TRUE(dt::parse_go_duration(c.text, max, &ns)) << c.text;
    EXPECT_EQ(ns, c.ns) << c.text;
  }
  int64_t ns = 0;
  for (const char *bad : {"", "-", "1", "h", "1x", "1h2", ".s", "1..5s", "99999999999999999999h", "2562047h47m17s"})
    EXPECT_FALSE(dt::parse_go_duration(bad, max, &ns)) << bad;
  EXPECT_TRUE(dt::parse_go_duration("1h", 3'600'000'000'000, &ns));
  EXPECT_FALSE(dt::parse_go_duration("1h1ns", 3'600'000'000'000, &ns)) << "one past the bound";
}

}  // namespace
