// test_byte_budget.cpp - byte budgets: the value parser (units), make_policy's limits
// for bytes, the rules file and flags (the bucket arithmetic with a cost: test_bucket.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "agent_args.h"
#include "cli/cli.h"
#include "common/parse_values.h"
#include "dataplane/policy.h"
#include "rules/config_file.h"
#include "rules/rules.h"

namespace {

// ---- values ---------------------------------------------------------------------

// A text a budget parser must refuse, and the whole message it must give.
struct Refusal {
  const char *text, *want;
};

// `parse` (parse_budget_rate or parse_budget_burst) refuses each text with its message.
template <class T, size_t N>
void expect_refusals(bool (*parse)(const std::string &, T *, bool *, std::string *), const Refusal (&cases)[N]) {
  for (const Refusal &c : cases) {
    T v{};
    bool bytes = false;
    std::string err;
    EXPECT_FALSE(parse(c.text, &v, &bytes, &err)) << c.text;
    EXPECT_EQ(err, c.want) << c.text;
  }
}

TEST(ByteValues, AcceptedRatesAndWhatTheyMean) {
  struct Case {
    const char *text;
    double per_second;
    bool bytes;
  } cases[] = {
      {"100", 100, false},
      {"10/m", 10.0 / 60, false},
      {"100B/s", 100, true},
      {"100kB/s", 100e3, true},
      {"1MB/s", 1e6, true},
      {"1GB/s", 1e9, true},
      {"1KiB/s", 1024, true},
      {"2MiB/s", 2 * 1048576.0, true},
      {"1GiB/s", 1073741824.0, true},
      {"8bit/s", 1, true},
      {"10Mbit/s", 1.25e6, true},
      {"1Gbit/s", 1.25e8, true},
      {"64kbit/s", 8000, true},
      {"1.5MB/s", 1.5e6, true},
      {"60kB/m", 1000, true},
      {"3600kB/h", 1000, true},
      {"100kB", 100e3, true},
  };
  for (const auto &c : cases) {
    double v = 0;
    bool bytes = !c.bytes;
    std::string err;
    ASSERT_TRUE(dt::parse_budget_rate(c.text, &v, &bytes, &err)) << c.text << ": " << err;
    EXPECT_NEAR(v, c.per_second, c.per_second * 1e-12) << c.text;
    EXPECT_EQ(bytes, c.bytes) << c.text;
  }
}

TEST(ByteValues, RefusedRatesSayWhy) {
  const std::string units = dt::kByteUnits;
  const Refusal cases[] = {
      {"10XB/s",
       "unknown unit 'XB' in '10XB/s': use B, kB, MB, GB (1000), KiB, MiB, GiB (1024) or bit, kbit, "
       "Mbit, Gbit (bits), e.g. 100kB/s or 10Mbit/s"},
      {"10mb/s",
       "unknown unit 'mb' in '10mb/s': use B, kB, MB, GB (1000), KiB, MiB, GiB (1024) or bit, kbit, "
       "Mbit, Gbit (bits), e.g. 100kB/s or 10Mbit/s"},
      {"kB/s",
       "invalid rate 'kB/s': expected packets per second such as 100, 0.1666 or 10/m, or bytes per "
       "second such as 100kB/s or 10Mbit/s"},
      {"0kB/s", "invalid rate '0kB/s': must be greater than 0"},
  };
  expect_refusals(dt::parse_budget_rate, cases);
  // Values that count packets or queries (tags) refuse byte units.
  double v;
  std::string err;
  EXPECT_FALSE(dt::parse_rate("1MB/s", &v, &err));
  EXPECT_EQ(err,
            "rate '1MB/s' is in bytes, but this limit counts packets (or queries): give a number per "
            "second such as 100");
}

TEST(ByteValues, Bursts) {
  struct Case {
    const char *text;
    uint64_t tokens;
    bool bytes;
  } ok[] = {{"50", 50, false},        {"1500B", 1500, true},   {"15kB", 15000, true},
            {"1.5kB", 1500, true},    {"64KiB", 65536, true},  {"1MB", 1000000, true},
            {"12000bit", 1500, true}, {"96kbit", 12000, true}, {"1GB", 1000000000, true}};
  for (const auto &c : ok) {
    uint64_t t = 0;
    bool bytes = !c.bytes;
    std::string err;
    ASSERT_TRUE(dt::parse_budget_burst(c.text, &t, &bytes, &err)) << c.text << ": " << err;
    EXPECT_EQ(t, c.tokens) << c.text;
    EXPECT_EQ(bytes, c.bytes) << c.text;
  }
  const Refusal bad[] = {
      {"12bit", "invalid burst '12bit': is 1.500000 bytes, not a whole number of bytes"},
      {"10kB/s", "invalid burst '10kB/s': a burst is an amount, not a rate: drop the '/...', e.g. 10kB"},
      {"10XB",
       "unknown unit 'XB' in '10XB': use B, kB, MB, GB (1000), KiB, MiB, GiB (1024) or bit, kbit, Mbit, "
       "Gbit (bits), e.g. 10kB or 64KiB"},
      {"2GB", "invalid burst '2GB': expected packets (1 to 1000000000) or bytes such as 15kB (1 B to 1 GB)"},
      {"2.5", "invalid value '2.5': expected a whole number from 1 to 1000000000"},
  };
  expect_refusals(dt::parse_budget_burst, bad);
}

TEST(ByteValues, Format) {
  EXPECT_EQ(dt::format_bytes(100e3), "100 kB");
  EXPECT_EQ(dt::format_bytes(1.25e6), "1.25 MB");
  EXPECT_EQ(dt::format_bytes(512), "512 B");
}

// ---- make_policy ----------------------------------------------------------------

TEST(BytePolicy, CompilesBytesPerNanosecond) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(dt::make_policy(1.25e6, 15000, &p, &err, true)) << err;  // 10Mbit/s, 15kB
  EXPECT_EQ(p.interval_ns, 800u);
  EXPECT_EQ(p.burst_ns, 15000u * 800u);
  EXPECT_EQ(p.flags, DT_POL_BYTES);
  EXPECT_TRUE(dt::policy_bytes(p));
  ASSERT_TRUE(dt::make_policy(100, 50, &p, &err)) << err;
  EXPECT_EQ(p.flags, 0);
  // Exact fast rates: 1e9 / rate a whole number of ns.
  for (double rate : {1e9, 5e8, 1.25e8, 1e8})
    EXPECT_TRUE(dt::make_policy(rate, 15000, &p, &err, true)) << rate << ": " << err;
  // Rates up to 20 MB/s are always within 1%.
  for (double rate = 1; rate <= 2e7; rate *= 1.37) EXPECT_LE(dt::byte_rate_precision(rate), 0.01) << rate;
}

TEST(BytePolicy, RefusesWhatItCannotKeep) {
  dt_policy p{};
  std::string err;
  EXPECT_FALSE(dt::make_policy(1.25e9, 15000, &p, &err, true));  // 10Gbit/s: 0.8 ns per byte
  EXPECT_NE(err.find("byte rate 1.25e+09 B/s cannot be kept within 1%: one byte every 0.8 ns rounds to 1 ns "
                     "(25.0% off)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("1GB/s (8Gbit/s, the highest)"), std::string::npos) << err;
  EXPECT_FALSE(dt::make_policy(3e8, 15000, &p, &err, true));  // 3.33 ns per byte: 10% off
  EXPECT_FALSE(dt::make_policy(2e9, 15000, &p, &err, true));
  EXPECT_EQ(err.rfind("byte rate 2e+09 B/s cannot be kept within 1%: one byte every 0.5 ns", 0), 0u) << err;
  EXPECT_FALSE(dt::make_policy(0.5, 15000, &p, &err, true));
  EXPECT_EQ(err, "byte rate 0.5 B/s is out of range: use 1B/s to 1GB/s (8Gbit/s)");
  EXPECT_FALSE(dt::make_policy(1e5, 1517, &p, &err, true));
  EXPECT_EQ(err,
            "byte burst 1517 B is out of range: use 1518 B (one full-size Ethernet frame, which a smaller "
            "burst could never admit) to 1GB, e.g. 15kB");
  EXPECT_TRUE(dt::make_policy(1e5, 1518, &p, &err, true)) << err;
}

// ---- rules file and flags -------------------------------------------------------

std::string rules_error(const std::string &body) {
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  if (dt::parse_rules("version = 1\n[[rule]]\nname = \"r\"\ncidr = \"198.18.0.0/24\"\n" + body, "r.toml", &rs, &err))
    return "";
  return err;
}

TEST(ByteRules, FileValues) {
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  ASSERT_TRUE(
      dt::parse_rules("version = 1\n[[rule]]\nname = \"r\"\ncidr = \"198.18.0.0/24\"\n"
                      "rate = \"10Mbit/s\"\nburst = \"15kB\"\n",
                      "r.toml", &rs, &err))
      << err;
  ASSERT_EQ(rs.rules.size(), 2u);
  EXPECT_TRUE(rs.rules[1].bytes);
  EXPECT_DOUBLE_EQ(rs.rules[1].rate, 1.25e6);
  EXPECT_EQ(rs.rules[1].burst, 15000u);
  dt::CompiledRules c;
  ASSERT_TRUE(dt::compile_rules(rs, &c, &err)) << err;
  EXPECT_EQ(c.policies[rs.rules[1].id].flags & DT_POL_BYTES, DT_POL_BYTES);
  EXPECT_EQ(c.policies[rs.rules[1].id].interval_ns, 800u);
  EXPECT_EQ(c.policies[0].flags & DT_POL_BYTES, 0) << "the default rule counts packets";
  EXPECT_EQ(rules_error("rate = \"100/s\"\nburst = 5\n"), "") << "a packet rate may be a string too";
}

TEST(ByteRules, FileErrors) {
  EXPECT_EQ(rules_error("rate = \"10XB/s\"\nburst = \"15kB\"\n"),
            "r.toml:5: 'rate': unknown unit 'XB' in '10XB/s': use B, kB, MB, GB (1000), KiB, MiB, GiB (1024) or "
            "bit, kbit, Mbit, Gbit (bits), e.g. 100kB/s or 10Mbit/s");
  EXPECT_EQ(rules_error("rate = 100\nburst = \"10kB\"\n"),
            "r.toml:2: rate = 100 is in packets but burst = \"10kB\" is in bytes: give both in bytes (e.g. a rate "
            "of 100kB/s), or both in packets");
  EXPECT_EQ(rules_error("rate = \"1MB/s\"\nburst = 50\n"),
            "r.toml:2: rate = \"1MB/s\" is in bytes but burst = 50 is in packets: give both in bytes (e.g. a burst "
            "of 15kB), or both in packets");
  EXPECT_EQ(rules_error("rate = \"100kB/s\"\nburst = \"1kB\"\n"),
            "r.toml:5: byte burst 1000 B is out of range: use 1518 B (one full-size Ethernet frame, which a "
            "smaller burst could never admit) to 1GB, e.g. 15kB");
  EXPECT_NE(rules_error("rate = \"10Gbit/s\"\nburst = \"1MB\"\n").find("r.toml:5: byte rate 1.25e+09 B/s cannot"),
            std::string::npos);
  dt::RuleSet rs = dt::default_rules(100, 50);
  std::string err;
  EXPECT_FALSE(dt::parse_rules("version = 1\n[[tag]]\nprefix = \"u:\"\nrate = \"1MB/s\"\nburst = \"15kB\"\n", "r.toml",
                               &rs, &err));
  EXPECT_EQ(err,
            "r.toml:2: tag rules count queries, not bytes: give 'rate' and 'burst' as numbers (rate = 100, "
            "burst = 50)");
}

// parse_run_options on "agent --iface lo" followed by `args`.
dt::ParseOutcome run_flags(std::vector<std::string> args, dt::RunOptions *o, std::string *err) {
  args.insert(args.begin(), {"--iface", "lo"});
  return dt::test::parse_agent_args(args, o, err);
}

TEST(ByteFlags, RateAndBurst) {
  dt::RunOptions o;
  std::string err;
  ASSERT_EQ(run_flags({"--rate", "100kB/s", "--burst", "10kB"}, &o, &err), dt::ParseOutcome::Ok) << err;
  EXPECT_TRUE(o.bytes);
  EXPECT_DOUBLE_EQ(o.rate, 1e5);
  EXPECT_EQ(o.burst, 10000u);
  dt::RunOptions q;
  EXPECT_EQ(run_flags({"--rate", "100", "--burst", "10kB"}, &q, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err,
            "--rate 100 is in packets but --burst 10kB is in bytes: give both in bytes (e.g. a rate of "
            "100kB/s), or both in packets");
  EXPECT_EQ(run_flags({"--rate", "10XB/s", "--burst", "10kB"}, &q, &err), dt::ParseOutcome::Error);
  EXPECT_NE(err.find("unknown unit 'XB' in '10XB/s'"), std::string::npos) << err;
  EXPECT_EQ(run_flags({"--rate", "10Gbit/s", "--burst", "1MB"}, &q, &err), dt::ParseOutcome::Error);
  EXPECT_EQ(err.rfind("--rate 10Gbit/s --burst 1MB: byte rate 1.25e+09 B/s cannot be kept within 1%", 0), 0u) << err;
  EXPECT_EQ(run_flags({"--tag-rule", "u:=1MB/s/50", "--rate", "1", "--burst", "1"}, &q, &err), dt::ParseOutcome::Error);
  EXPECT_NE(err.find("is in bytes, but this limit counts packets (or queries)"), std::string::npos) << err;
}

}  // namespace
