// test_rules_parse.cpp - reading the rules file (--rules FILE): every field, every error
// with its line, adaptive and dry-run settings.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>
#include <vector>

#include "rules_test_util.h"

namespace {

using namespace rules_test;

TEST(RulesParse, GoodFileAllFields) {
  const std::string text =
      "# office and web\n"             // 1
      "version = 1\n"                  // 2
      "\n"                             // 3
      "[[rule]]\n"                     // 4
      "name = \"office\"\n"            // 5
      "cidr = \"198.18.10.0/24\"\n"    // 6
      "action = \"allow\"\n"           // 7
      "\n"                             // 8
      "[[rule]]\n"                     // 9
      "name = \"web-syn\"\n"           // 10
      "cidr = \"2001:2:0:40::/60\"\n"  // 11
      "action = \"throttle\"\n"        // 12
      "proto = \"tcp\"\n"              // 13
      "dport = \"80-443\"\n"           // 14
      "syn = true\n"                   // 15
      "rate = 2.5\n"                   // 16
      "burst = 40\n"                   // 17
      "key_prefix = 56\n"              // 18
      "[[rule]]\n"                     // 19
      "name = \"dns\"\n"               // 20
      "cidr = \"198.18.0.0/15\"\n"     // 21
      "proto = \"udp\"\n"              // 22
      "dport = 53\n"                   // 23
      "rate = 20\n"                    // 24
      "burst = 10\n"                   // 25
      "key_prefix = 24\n"              // 26
      "[[rule]]\n"                     // 27
      "name = \"ping\"\n"              // 28
      "cidr = \"198.18.0.9\"\n"        // 29
      "proto = \"icmp\"\n"             // 30
      "action = \"deny\"\n"            // 31
      "[[tag]]\n"                      // 32
      "prefix = \"user:\"\n"           // 33
      "rate = 5\n"                     // 34
      "burst = 10\n";                  // 35
  dt::RuleSet rs;
  std::string err;
  ASSERT_TRUE(parse(text, &rs, &err)) << err;
  EXPECT_EQ(rs.origin, kOrigin);
  ASSERT_EQ(rs.rules.size(), 5u);

  const dt::PacketRule &d = rs.rules[0];
  EXPECT_EQ(d.name, "default") << "rules[0] must stay the --rate/--burst rule";
  EXPECT_EQ(d.rate, 100);
  EXPECT_EQ(d.burst, 50u);

  const dt::PacketRule &office = rs.rules[1];
  EXPECT_EQ(office.name, "office");
  EXPECT_EQ(office.line, 4);
  EXPECT_TRUE(office.v4);
  EXPECT_EQ(office.prefix_len, 120) << "an IPv4 /24 is /120 of the mapped form";
  const uint8_t office_addr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 10, 0};
  EXPECT_EQ(memcmp(office.addr, office_addr, 16), 0);
  EXPECT_EQ(office.action, dt::RuleAction::Allow);
  EXPECT_EQ(office.proto, 0);
  EXPECT_EQ(office.dport_lo, 0);
  EXPECT_EQ(office.dport_hi, 0);
  EXPECT_FALSE(office.syn_only);
  EXPECT_EQ(office.key_prefix, 32) << "IPv4 rules key per address by default";

  const dt::PacketRule &web = rs.rules[2];
  EXPECT_EQ(web.name, "web-syn");
  EXPECT_EQ(web.line, 9);
  EXPECT_FALSE(web.v4);
  EXPECT_EQ(web.prefix_len, 60);
  uint8_t web_addr[16];
  ASSERT_EQ(inet_pton(AF_INET6, "2001:2:0:40::", web_addr), 1);
  EXPECT_EQ(memcmp(web.addr, web_addr, 16), 0);
  EXPECT_EQ(web.action, dt::RuleAction::Throttle);
  EXPECT_EQ(web.proto, IPPROTO_TCP);
  EXPECT_EQ(web.dport_lo, 80);
  EXPECT_EQ(web.dport_hi, 443);
  EXPECT_TRUE(web.syn_only);
  EXPECT_EQ(web.rate, 2.5);
  EXPECT_EQ(web.burst, 40u);
  EXPECT_EQ(web.key_prefix, 56);

  const dt::PacketRule &dns = rs.rules[3];
  EXPECT_EQ(dns.action, dt::RuleAction::Throttle) << "throttle is the default action";
  EXPECT_EQ(dns.prefix_len, 96 + 15);
  EXPECT_EQ(dns.proto, IPPROTO_UDP);
  EXPECT_EQ(dns.dport_lo, 53) << "dport may be an integer";
  EXPECT_EQ(dns.dport_hi, 53);
  EXPECT_EQ(dns.rate, 20);
  EXPECT_EQ(dns.burst, 10u);
  EXPECT_EQ(dns.key_prefix, 24);

  const dt::PacketRule &ping = rs.rules[4];
  EXPECT_EQ(ping.prefix_len, 128) << "an address without a length is one host";
  EXPECT_EQ(ping.proto, IPPROTO_ICMP);
  EXPECT_EQ(ping.action, dt::RuleAction::Deny);

  ASSERT_EQ(rs.tags.size(), 1u);
  EXPECT_EQ(rs.tags[0].prefix, "user:");
  EXPECT_EQ(rs.tags[0].rate, 5);
  EXPECT_EQ(rs.tags[0].burst, 10u);
  EXPECT_EQ(rs.tags[0].line, 32);
}

TEST(RulesParse, IPv6DefaultsAndIcmpv6) {
  dt::RuleSet rs;
  std::string err;
  ASSERT_TRUE(parse("version = 1\n" + rule("v6", "2001:2::/48", "proto = \"icmp\"\nrate = 1\nburst = 1\n"), &rs, &err))
      << err;
  ASSERT_EQ(rs.rules.size(), 2u);
  EXPECT_EQ(rs.rules[1].proto, IPPROTO_ICMPV6) << "icmp in an IPv6 rule means ICMPv6";
  EXPECT_EQ(rs.rules[1].key_prefix, 64) << "IPv6 rules key per /64 by default";
}

TEST(RulesParse, EmptyFileKeepsOnlyTheDefaultAndReplacesEarlierRules) {
  dt::RuleSet rs = dt::default_rules(7, 3);
  std::string err;
  ASSERT_TRUE(
      dt::parse_rules("version = 1\n" + rule("a", "198.18.0.0/16") + "[[tag]]\nprefix = \"\"\nrate = 1\nburst = 1\n",
                      "first.toml", &rs, &err))
      << err;
  ASSERT_EQ(rs.rules.size(), 2u);
  ASSERT_TRUE(dt::parse_rules("version = 1\n", "second.toml", &rs, &err)) << err;
  ASSERT_EQ(rs.rules.size(), 1u) << "a re-parse must drop the rules of the previous file";
  EXPECT_TRUE(rs.tags.empty()) << "and its tags";
  EXPECT_EQ(rs.rules[0].name, "default");
  EXPECT_EQ(rs.rules[0].rate, 7);
  EXPECT_EQ(rs.origin, "second.toml");
}

TEST(RulesParse, ErrorLeavesTheRuleSetUntouched) {
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  ASSERT_TRUE(dt::parse_rules("version = 1\n" + rule("keep", "198.18.0.0/16"), "old.toml", &rs, &err)) << err;
  EXPECT_FALSE(dt::parse_rules("version = 1\n" + rule("new", "198.18.0.1/16"), "new.toml", &rs, &err));
  ASSERT_EQ(rs.rules.size(), 2u);
  EXPECT_EQ(rs.rules[1].name, "keep");
  EXPECT_EQ(rs.origin, "old.toml");
}

TEST(RulesParse, EveryErrorWithItsLine) {
  const std::string v = "version = 1\n";                                             // line 1
  const std::string hdr = v + "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\n";  // rule at line 2, cidr on 4
  const std::vector<ErrorCase> cases = {
      {"missing version", "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\naction = \"deny\"\n",
       "r.toml:1: the file needs 'version = 1' (the rules format version)"},
      {"version 2", "version = 2\n", "r.toml:1: the file needs 'version = 1' (the rules format version)"},
      {"version as a string", "version = \"1\"\n", "r.toml:1: the file needs 'version = 1' (the rules format version)"},
      {"unknown top-level key", v + "\n" + "limit = 3\n",
       "r.toml:3: unknown key 'limit' in the file (known: allow_file, deny_file, rule, tag, version)"},
      {"[rule] instead of [[rule]]", v + "[rule]\nname = \"a\"\n",
       "r.toml:2: 'rule' must be written as [[rule]] tables"},
      {"rule not a table", v + "rule = [1]\n", "r.toml:2: each [[rule]] must be a table"},
      {"unknown rule key", hdr + "action = \"deny\"\ncolour = \"red\"\n",
       "r.toml:6: unknown key 'colour' in a [[rule]] (known: action, adaptive, attack_drops, burst, cidr, dport, "
       "dry_run, dst, "
       "escalate, icmp_code, icmp_type, key_by, key_prefix, len, name, prefix_limits, proto, rate, sport, syn, "
       "syn_cookies, tcp_flags)"},
      {"missing name", v + "[[rule]]\ncidr = \"198.18.0.0/24\"\n",
       "r.toml:2: a [[rule]] needs a 'name' and a 'cidr' (or a 'dst': then every source of its family)"},
      {"missing cidr", v + "\n[[rule]]\nname = \"a\"\naction = \"deny\"\n",
       "r.toml:3: a [[rule]] needs a 'name' and a 'cidr' (or a 'dst': then every source of its family)"},
      {"name not a string", v + "[[rule]]\nname = 5\ncidr = \"198.18.0.0/24\"\n", "r.toml:3: 'name' must be a string"},
      {"bad name", v + "[[rule]]\nname = \"a b\"\ncidr = \"198.18.0.0/24\"\n",
       "r.toml:3: rule name 'a b' must be 1 to 47 characters of A-Z a-z 0-9 . _ : -"},
      {"name too long", v + "[[rule]]\nname = \"" + std::string(48, 'n') + "\"\ncidr = \"198.18.0.0/24\"\n",
       "r.toml:3: rule name '" + std::string(48, 'n') + "' must be 1 to 47 characters of A-Z a-z 0-9 . _ : -"},
      {"bad cidr", v + "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.300/24\"\n",
       "r.toml:4: '198.18.0.300/24' is not an IPv4 or IPv6 address or CIDR"},
      {"IPv4 prefix too long", v + "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/33\"\n",
       "r.toml:4: '198.18.0.0/33': prefix length must be 0 to 32"},
      {"IPv6 prefix too long", v + "[[rule]]\nname = \"a\"\ncidr = \"2001:2::/129\"\n",
       "r.toml:4: '2001:2::/129': prefix length must be 0 to 128"},
      {"prefix length not a number", v + "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/2x\"\n",
       "r.toml:4: '198.18.0.0/2x': prefix length must be 0 to 32"},
      {"empty prefix length", v + "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/\"\n",
       "r.toml:4: '198.18.0.0/': prefix length must be 0 to 32"},
      {"host bits set", v + "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.1/24\"\n",
       "r.toml:4: '198.18.0.1/24' has bits set past its /24 prefix (did you mean the network address?)"},
      {"IPv6 host bits set", v + "[[rule]]\nname = \"a\"\ncidr = \"2001:2::1/64\"\n",
       "r.toml:4: '2001:2::1/64' has bits set past its /64 prefix (did you mean the network address?)"},
      {"IPv4-mapped IPv6 cidr", v + "[[rule]]\nname = \"a\"\ncidr = \"::ffff:198.18.0.0/120\"\n",
       "r.toml:4: '::ffff:198.18.0.0/120' is an IPv4-mapped range: write it as an IPv4 CIDR"},
      {"IPv4-mapped /96", v + "[[rule]]\nname = \"a\"\ncidr = \"::ffff:0:0/96\"\n",
       "r.toml:4: '::ffff:0:0/96' is an IPv4-mapped range: write it as an IPv4 CIDR"},
      {"bad action", hdr + "action = \"block\"\n", "r.toml:5: action 'block' is not one of throttle, allow, deny"},
      {"bad proto", hdr + "action = \"deny\"\nproto = \"sctp\"\n",
       "r.toml:6: proto 'sctp' is not one of tcp, udp, icmp"},
      {"dport without proto", hdr + "action = \"deny\"\ndport = \"80\"\n",
       "r.toml:6: 'dport' needs proto = \"tcp\" or \"udp\""},
      {"dport with icmp", hdr + "action = \"deny\"\nproto = \"icmp\"\ndport = \"80\"\n",
       "r.toml:7: 'dport' needs proto = \"tcp\" or \"udp\""},
      {"reversed port range", hdr + "action = \"deny\"\nproto = \"udp\"\ndport = \"90-80\"\n",
       "r.toml:7: dport must be a port (1-65535) or a range like \"8000-8080\""},
      {"port 0", hdr + "action = \"deny\"\nproto = \"tcp\"\ndport = 0\n",
       "r.toml:7: dport must be a port (1-65535) or a range like \"8000-8080\""},
      {"port 65536", hdr + "action = \"deny\"\nproto = \"tcp\"\ndport = \"1-65536\"\n",
       "r.toml:7: dport must be a port (1-65535) or a range like \"8000-8080\""},
      {"open port range", hdr + "action = \"deny\"\nproto = \"tcp\"\ndport = \"80-\"\n",
       "r.toml:7: dport must be a port (1-65535) or a range like \"8000-8080\""},
      {"syn without tcp", hdr + "action = \"deny\"\nproto = \"udp\"\nsyn = true\n",
       "r.toml:7: 'syn' is true or false, and true needs proto = \"tcp\""},
      {"syn without proto", hdr + "action = \"deny\"\nsyn = true\n",
       "r.toml:6: 'syn' is true or false, and true needs proto = \"tcp\""},
      {"syn not a boolean", hdr + "action = \"deny\"\nproto = \"tcp\"\nsyn = \"yes\"\n",
       "r.toml:7: 'syn' is true or false, and true needs proto = \"tcp\""},
      {"throttle without rate", hdr + "burst = 5\n", "r.toml:2: a throttle needs both 'rate' (per second) and 'burst'"},
      {"throttle without burst", hdr + "action = \"throttle\"\nrate = 5\n",
       "r.toml:2: a throttle needs both 'rate' (per second) and 'burst'"},
      {"rate not a number", hdr + "rate = \"fast\"\nburst = 5\n",
       "r.toml:5: 'rate': invalid rate 'fast': expected packets per second such as 100, 0.1666 or 10/m, or bytes per "
       "second such as 100kB/s or 10Mbit/s"},
      {"rate a boolean", hdr + "rate = true\nburst = 5\n",
       "r.toml:5: 'rate' must be a number of packets per second, or a string such as \"10Mbit/s\""},
      {"burst not whole", hdr + "rate = 5\nburst = 2.5\n",
       "r.toml:6: 'burst' must be a whole number of at least 1, or bytes such as \"15kB\""},
      {"burst 0", hdr + "rate = 5\nburst = 0\n",
       "r.toml:6: 'burst' must be a whole number of at least 1, or bytes such as \"15kB\""},
      {"rate out of range", hdr + "rate = 2000000\nburst = 5\n",
       "r.toml:5: rate 2000000.000000 is out of range: use 0.000001 to 1000000 packets per second"},
      {"allow with rate", hdr + "action = \"allow\"\nrate = 5\n", "r.toml:2: 'allow' rules take no rate or burst"},
      {"deny with burst", hdr + "action = \"deny\"\nburst = 5\n", "r.toml:2: 'deny' rules take no rate or burst"},
      {"key_prefix 0", hdr + "rate = 5\nburst = 5\nkey_prefix = 0\n",
       "r.toml:7: key_prefix must be 1 to 32 for an IPv4 rule"},
      {"key_prefix 33", hdr + "rate = 5\nburst = 5\nkey_prefix = 33\n",
       "r.toml:7: key_prefix must be 1 to 32 for an IPv4 rule"},
      {"IPv6 key_prefix 129",
       v + "[[rule]]\nname = \"a\"\ncidr = \"2001:2::/48\"\nrate = 5\nburst = 5\nkey_prefix = 129\n",
       "r.toml:7: key_prefix must be 1 to 128 for an IPv6 rule"},
      {"duplicate names", v + rule("a", "198.18.0.0/24") + rule("b", "198.18.1.0/24") + rule("a", "198.18.2.0/24"),
       "r.toml:10: rule name 'a' is used twice"},
      {"'default' as a name", v + rule("default", "198.18.0.0/24"),
       "r.toml:2: rule name 'default' is used twice ('default' is the --rate/--burst rule)"},
      {"tag not a table", v + "tag = [1]\n", "r.toml:2: each [[tag]] must be a table"},
      {"tag without prefix", v + "[[tag]]\nrate = 1\nburst = 1\n",
       "r.toml:2: a [[tag]] needs a 'prefix' string (\"\" matches every tag)"},
      {"unknown tag key", v + "[[tag]]\nprefix = \"x\"\nrate = 1\nburst = 1\ncolour = 2\n",
       "r.toml:6: unknown key 'colour' in a [[tag]] (known: adaptive, burst, on_redis_error, prefix, rate, strict)"},
      {"tag without burst", v + "[[tag]]\nprefix = \"x\"\nrate = 1\n",
       "r.toml:2: a throttle needs both 'rate' (per second) and 'burst'"},
      {"tag prefix duplicate",
       v + "[[tag]]\nprefix = \"user:\"\nrate = 1\nburst = 1\n\n[[tag]]\nprefix = \"user:\"\nrate = 2\nburst = 2\n",
       "r.toml:7: tag prefix 'user:' is used twice"},
  };
  for (const ErrorCase &c : cases) EXPECT_EQ(error_of(c.text), c.want) << c.what << ", file:\n" << c.text;
}

// The rules format version is reported where it is written, not always on line 1.
TEST(RulesParse, WrongVersionPointsAtItsLine) {
  EXPECT_EQ(error_of("# dthrottle rules\n\nversion = 2\n"),
            "r.toml:3: the file needs 'version = 1' (the rules format version)");
}

TEST(RulesParse, SyntaxErrorsNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"version = 1\n[[rule]\nname = \"a\"\n", "r.toml:2: TOML syntax: "},
      {"version = 1\n\nx = = 3\n", "r.toml:3: TOML syntax: "},
      {"version = 1\n[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\nname = \"b\"\n", "r.toml:5: TOML syntax: "},
      {"version = 1\nversion = 1\n", "r.toml:2: TOML syntax: "},
  };
  for (const auto &[text, prefix] : cases) {
    const std::string err = error_of(text);
    EXPECT_EQ(err.rfind(prefix, 0), 0u) << "error '" << err << "' does not start with '" << prefix << "' for:\n"
                                        << text;
    EXPECT_EQ(err.find('\n'), std::string::npos) << "a one-line message: " << err;
    EXPECT_GT(err.size(), prefix.size()) << "says what is wrong";
  }
}

TEST(RulesParse, AtMost255Rules) {
  std::string text = "version = 1\n";
  for (int i = 1; i <= 255; i++) text += rule("r" + std::to_string(i), "198.18." + std::to_string(i) + ".0/24");
  EXPECT_EQ(error_of(text), "");
  text += rule("r256", "198.19.0.0/24");  // at line 1 + 255 * 4 + 1
  EXPECT_EQ(error_of(text), "r.toml:1022: too many rules: at most 255");
}

TEST(RulesParse, UnreadableFile) {
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  EXPECT_FALSE(dt::load_rules_file("/nonexistent/dthrottle-rules.toml", &rs, &err));
  EXPECT_EQ(err, "cannot read rules file /nonexistent/dthrottle-rules.toml: No such file or directory");
}

// --- adaptive rules -----------------------------------------------------------------

TEST(RulesAdaptive, TrueTakesTheDefaultsAndATableSetsEachParameter) {
  dt::RuleSet rs;
  std::string err;
  ASSERT_TRUE(
      parse("version = 1\n"
            "[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\nrate = 10\nburst = 5\nadaptive = true\n"
            "[[rule]]\nname = \"b\"\ncidr = \"198.18.1.0/24\"\nrate = 10\nburst = 5\n"
            "adaptive = { decrease = 0.25, recovery = 2, floor = 0.05, scope = \"local\", listen_port = 8080 }\n"
            "[[rule]]\nname = \"c\"\ncidr = \"198.18.2.0/24\"\nrate = 10\nburst = 5\n"
            "[[tag]]\nprefix = \"api:\"\nrate = 5\nburst = 5\nadaptive = { listen_port = 443 }\n",
            &rs, &err))
      << err;
  ASSERT_EQ(rs.rules.size(), 4u);
  const dt::AdaptiveConfig &a = rs.rules[1].adaptive, &b = rs.rules[2].adaptive, &c = rs.rules[3].adaptive;
  EXPECT_TRUE(a.enabled);
  EXPECT_DOUBLE_EQ(a.params.decrease, 0.5) << "default decrease";
  EXPECT_DOUBLE_EQ(a.params.recovery, 3.0) << "default recovery";
  EXPECT_DOUBLE_EQ(a.params.floor, 0.01) << "default floor";
  EXPECT_TRUE(a.params.cluster) << "default scope is the cluster";
  EXPECT_EQ(a.listen_port, 0);
  EXPECT_TRUE(b.enabled);
  EXPECT_DOUBLE_EQ(b.params.decrease, 0.25);
  EXPECT_DOUBLE_EQ(b.params.recovery, 2.0);
  EXPECT_DOUBLE_EQ(b.params.floor, 0.05);
  EXPECT_FALSE(b.params.cluster);
  EXPECT_EQ(b.listen_port, 8080);
  EXPECT_FALSE(c.enabled) << "a rule without 'adaptive' is not adaptive";
  ASSERT_EQ(rs.tags.size(), 1u);
  EXPECT_TRUE(rs.tags[0].adaptive.enabled);
  EXPECT_EQ(rs.tags[0].adaptive.listen_port, 443);
}

TEST(RulesAdaptive, EveryErrorWithItsLine) {
  const std::string r = "version = 1\n[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\nrate = 10\nburst = 5\n";  // 2-6
  const std::vector<ErrorCase> cases = {
      {"adaptive not a bool or table", r + "adaptive = \"yes\"\n",
       "r.toml:7: 'adaptive' must be true, false or a table like { decrease = 0.5, recovery = 3 }"},
      {"unknown adaptive key", r + "adaptive = { speed = 2 }\n",
       "r.toml:7: unknown key 'speed' in 'adaptive' (known: decrease, floor, listen_port, recovery, scope)"},
      {"decrease 1", r + "adaptive = { decrease = 1 }\n",
       "r.toml:7: adaptive: decrease must be between 0 and 1 (exclusive), e.g. 0.5 halves the limit on a busy signal"},
      {"decrease not a number", r + "adaptive = { decrease = \"half\" }\n",
       "r.toml:7: adaptive 'decrease' must be a number"},
      {"recovery 1", r + "adaptive = { recovery = 1 }\n",
       "r.toml:7: adaptive: recovery must be above 1 and at most 100 (the factor's growth per second), e.g. 3"},
      {"floor 0", r + "adaptive = { floor = 0 }\n",
       "r.toml:7: adaptive: floor must be between 0.001 and 1 (the lowest fraction of the rate), e.g. 0.01"},
      {"bad scope", r + "adaptive = { scope = \"global\" }\n",
       "r.toml:7: adaptive 'scope' must be \"cluster\" or \"local\""},
      {"bad listen port", r + "adaptive = { listen_port = 70000 }\n",
       "r.toml:7: adaptive 'listen_port' must be a TCP port, 1 to 65535"},
      {"adaptive allow rule",
       "version = 1\n[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\naction = \"allow\"\n"
       "adaptive = true\n",
       "r.toml:2: only throttle rules can be adaptive ('allow' has no rate to adapt)"},
      {"adaptive strict tag",
       "version = 1\n[[tag]]\nprefix = \"x\"\nrate = 1\nburst = 1\nstrict = true\n"
       "adaptive = true\n",
       "r.toml:2: a strict tag rule cannot be adaptive (Redis holds its one budget)"},
  };
  for (const auto &c : cases) EXPECT_EQ(error_of(c.text), c.want) << "case: " << c.what;
}

// --- dry run ------------------------------------------------------------------------

TEST(RulesDryRun, BadValueNamesItsLine) {
  const std::string r = "version = 1\n[[rule]]\nname = \"a\"\ncidr = \"198.18.0.0/24\"\nrate = 1\nburst = 1\n";
  const std::string want =
      "r.toml:7: 'dry_run' must be true or false (without quotes): dry_run = true counts what the rule would "
      "drop and drops nothing";
  EXPECT_EQ(error_of(r + "dry_run = \"yes\"\n"), want);
  EXPECT_EQ(error_of(r + "dry_run = 1\n"), want);
  EXPECT_EQ(error_of(r + "\ndry_run = \"true\"\n"), "r.toml:8" + want.substr(std::string("r.toml:7").size()));
}

}  // namespace
