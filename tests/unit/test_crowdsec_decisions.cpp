// test_crowdsec_decisions.cpp - the CrowdSec decision stream read into bans (crowdsec/
// decisions.h, go_duration.h): answers recorded from Debian 12's LAPI (crowdsec 1.4.6),
// durations in Go's syntax, and every kind of bad input counted or refused, never a crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent_args.h"
#include "cli/cli.h"
#include "crowdsec/decisions.h"
#include "crowdsec/go_duration.h"
#include "crowdsec/lapi_client.h"
#include "rules/config_file.h"

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

TEST(CrowdsecDecisions, NestingDeeperThanTheLimitIsRefusedWhereverItIs) {
  const std::string deep = std::string(17, '[') + std::string(17, ']');
  const std::string ok = std::string(13, '[') + std::string(13, ']');  // 16 levels under {"other": and [
  StreamBatch b;
  std::string err;
  EXPECT_FALSE(parse(R"({"other":)" + deep + R"(,"new":[]})", &b, &err));
  EXPECT_NE(err.find("deeper than 16 levels"), std::string::npos) << err;
  EXPECT_FALSE(parse(R"({"new":[)" + deep + "]}", &b, &err));
  EXPECT_FALSE(parse(deep, &b, &err));
  EXPECT_TRUE(parse(R"({"other":[)" + ok + R"(],"new":[)" + ok + "]}", &b, &err)) << err;
  EXPECT_EQ(b.counts.invalid, 1u);
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
  for (const char *bad : {"0.0.0.0/0", "::/0", "198.18.0.0/33", "2001:2::/129", "198.18.0.0/", "198.18.0.0/-1",
                          "198.18.0.0/2x", "", "host.example", "198.18.0.0/24 "})
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

namespace {

long peak_rss_kib() {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kib = atol(line + 6);
  if (f) fclose(f);
  return kib;
}

bool reset_peak_rss() {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  const bool ok = f && fputs("5", f) >= 0;
  if (f) fclose(f);
  return ok;
}

TEST(CrowdsecDecisions, DeepNestingIsRefusedBeforeParsing) {
  const size_t levels = 8u << 20;  // a 16 MiB body
  const std::string body = "{\"new\":" + std::string(levels, '[') + std::string(levels, ']') + "}";
  ASSERT_TRUE(reset_peak_rss()) << "cannot reset the peak RSS (/proc/self/clear_refs)";
  const long before = peak_rss_kib();
  StreamBatch b;
  std::string err;
  EXPECT_FALSE(parse(body, &b, &err)) << "8M levels of nesting were parsed";
  EXPECT_NE(err.find("deeper than 16 levels"), std::string::npos) << err;
  const long grown = peak_rss_kib() - before;
  EXPECT_LT(grown, 4 * 1024) << "parsing 8M levels of nesting took " << grown << " KiB more";
}

TEST(CrowdsecDecisions, BracketsInStringsAreNoNesting) {
  const std::string body = R"({"new":[{"duration":"1h","origin":"crowdsec","scenario":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[",)"
                           R"("scope":"Ip","type":"ban","value":"198.18.0.1"}],"deleted":null})";
  StreamBatch b;
  std::string err;
  ASSERT_TRUE(parse(body, &b, &err)) << err;
  EXPECT_EQ(b.added.size(), 1u);
}

// parse_crowdsec_command on "crowdsec ARGS..."; its exit code (-1: go on) and what it printed.
int crowdsec_args(std::vector<std::string> args, std::string *printed, dt::CrowdsecOptions *o) {
  args.insert(args.begin(), "crowdsec");
  std::string out;
  const int code = dt::test::run_captured(
      [o](int argc, char **argv) { return dt::parse_crowdsec_command(argc, argv, o); }, args, printed, &out);
  *printed += out;
  return code;
}

TEST(CrowdsecOptions, PlainHttpOnlyToLoopbackUnlessInsecureLapi) {
  const std::vector<std::string> tail = {"--key-file", "/nonexistent/k", "--pin-dir", "/nonexistent/p"};
  auto run = [&](std::vector<std::string> head, std::string *printed) {
    dt::CrowdsecOptions o;
    head.insert(head.end(), tail.begin(), tail.end());
    return crowdsec_args(head, printed, &o);
  };
  std::string out;
  for (const char *far : {"http://198.18.0.1:8080", "http://crowdsec:8080", "http://[2001:2::1]:8080"}) {
    EXPECT_EQ(run({"--lapi", far}, &out), 2) << far;
    EXPECT_NE(out.find("--insecure-lapi"), std::string::npos) << far << ": " << out;
    EXPECT_EQ(run({"--lapi", far, "--insecure-lapi"}, &out), -1) << far << ": " << out;
  }
  for (const char *near : {"http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080",
                           "https://198.18.0.1:8443", "https://crowdsec:8443/prefix"})
    EXPECT_EQ(run({"--lapi", near}, &out), -1) << near << ": " << out;
  EXPECT_EQ(run({"--lapi", "http://127.0.0.1:8080", "--ca-file", "/etc/ssl/certs/ca-certificates.crt"}, &out), 2);
  EXPECT_NE(out.find("for an https:// LAPI"), std::string::npos) << out;
  EXPECT_EQ(run({"--lapi", "https://198.18.0.1", "--cert", "/x.pem"}, &out), 2);
  EXPECT_NE(out.find("--cert and --key go together"), std::string::npos) << out;
}

TEST(CrowdsecOptions, TlsFilesMustLoad) {
  dt::LapiUrl url;
  std::string err;
  ASSERT_TRUE(dt::parse_lapi_url("https://198.18.0.1:8443", &url, &err)) << err;
  url.ca_file = "/nonexistent/ca.pem";
  EXPECT_FALSE(dt::lapi_tls_usable(url, &err));
  EXPECT_NE(err.find("--ca-file: cannot read /nonexistent/ca.pem"), std::string::npos) << err;
  url.ca_file = "";
  url.cert_file = url.key_file = "/dev/null";
  EXPECT_FALSE(dt::lapi_tls_usable(url, &err));
  EXPECT_NE(err.find("OpenSSL cannot load them"), std::string::npos) << err;
  url.cert_file = url.key_file = "";
  EXPECT_TRUE(dt::lapi_tls_usable(url, &err)) << err;
}

}  // namespace
