// rules_test_util.h - what the rules tests share: parsing and compiling a text, the
// compiled trie's entries by CIDR, a [[rule]] block, a rules file on disk.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/address.h"
#include "rules/rules.h"
#include "temp_dir.h"

namespace rules_test {

inline constexpr const char *kOrigin = "r.toml";

// parse_rules of `text` over the default rule (100/s, burst 50); the error in *err.
inline bool parse(const std::string &text, dt::RuleSet *rs, std::string *err) {
  *rs = dt::default_rules(100, 50);
  err->clear();
  return dt::parse_rules(text, kOrigin, rs, err);
}

// The error parse_rules gives for `text` ("" if it accepted it).
inline std::string error_of(const std::string &text) {
  dt::RuleSet rs;
  std::string err;
  if (parse(text, &rs, &err)) return "";
  return err;
}

// parse + compile; fails the test on any error.
inline dt::CompiledRules compiled(const std::string &text, double rate = 100, uint64_t burst = 50) {
  dt::RuleSet rs = dt::default_rules(rate, burst);
  std::string err;
  dt::CompiledRules c;
  EXPECT_TRUE(dt::parse_rules(text, kOrigin, &rs, &err)) << err;
  EXPECT_TRUE(dt::compile_rules(rs, &c, &err)) << err;
  return c;
}

// "198.18.1.0/24" or "2001:2::/48" as the trie's key (IPv4 mapped, length of the 128-bit form).
inline dt_lpm_key lpm_key(const std::string &cidr) {
  dt_lpm_key k{};
  const size_t slash = cidr.find('/');
  dt_key a{};
  EXPECT_TRUE(dt::key_from_string(cidr.substr(0, slash), &a)) << cidr;
  memcpy(k.addr, a.addr, 16);
  const int len = std::stoi(cidr.substr(slash + 1));
  k.prefixlen = static_cast<uint32_t>(cidr.find(':') == std::string::npos ? 96 + len : len);
  return k;
}

// The candidate rule ids of `cidr` in the compiled trie; {} (and a failure) if absent.
inline std::vector<uint16_t> candidates(const dt::CompiledRules &c, const std::string &cidr) {
  const dt_lpm_key want = lpm_key(cidr);
  for (const auto &[k, set] : c.lpm) {
    if (k.prefixlen != want.prefixlen || memcmp(k.addr, want.addr, 16) != 0) continue;
    std::vector<uint16_t> ids;
    for (uint32_t i = 0; i < set.count && i < DT_MAX_CANDIDATES; i++) ids.push_back(set.m[i].rule);
    return ids;
  }
  ADD_FAILURE() << "no trie entry for " << cidr;
  return {};
}

inline const dt_rule_match *match_of(const dt::CompiledRules &c, const std::string &cidr, uint16_t rule) {
  const dt_lpm_key want = lpm_key(cidr);
  for (const auto &[k, set] : c.lpm)
    if (k.prefixlen == want.prefixlen && memcmp(k.addr, want.addr, 16) == 0)
      for (uint32_t i = 0; i < set.count && i < DT_MAX_CANDIDATES; i++)
        if (set.m[i].rule == rule) return &set.m[i];
  return nullptr;
}

using Ids = std::vector<uint16_t>;

// A [[rule]] block: name, cidr and the other lines as written.
inline std::string rule(const std::string &name, const std::string &cidr,
                        const std::string &rest = "action = \"deny\"\n") {
  return "[[rule]]\nname = \"" + name + "\"\ncidr = \"" + cidr + "\"\n" + rest;
}

// Every error names the file and the line of the offending key (or of its [[rule]]).
struct ErrorCase {
  const char *what;
  std::string text;
  std::string want;  // the whole message
};

// A rules file in a scratch directory, removed with it.
class RulesFile {
 public:
  explicit RulesFile(const std::string &text) { write(text); }
  void write(const std::string &text) {
    std::ofstream out(path());
    out << text;
    EXPECT_TRUE(out.good()) << "cannot write " << path();
  }
  std::string path() const { return dir_.file("rules.toml"); }

 private:
  dt::test::TempDir dir_{"dthrottle-rules"};
};

}  // namespace rules_test
