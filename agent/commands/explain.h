// explain.h - what `agent explain ADDR` says: the rule that matches an address (and why),
// the bucket of each rule that may apply, and which peers reported it, read from the
// pinned maps and, for the peers, from the running agent.
// Also the address's buckets as a destination (rules keyed by destination: as_destination).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bans/ban_types.h"
#include "commands/rule_conditions.h"
#include "dthrottle/common.h"

namespace dt {

struct PinnedMaps;

// One prefix budget level of a rule as it applies to the address (its family's levels).
struct ExplainLevel {
  std::string level;   // "v4/24"
  dt_policy policy{};  // live
  dt_key key{};        // the level's bucket key: the address cut to the level
  bool has_bucket = false;
  dt_bucket bucket{};
};

// One candidate rule of the matched prefix, in the order the packet path tries them.
struct ExplainRule {
  uint32_t id = 0;
  std::string name;
  std::string when;                  // its conditions: "any packet", "udp dport 53", "tcp syn dport 80-89"
  Json conditions = Json::object();  // the same by key: {"proto": "udp", "sport": "123"}
  dt_policy policy{};                // live
  dt_key key{};                      // the bucket key of the address under this rule (throttle rules)
  bool has_bucket = false;
  dt_bucket bucket{};
  std::vector<ExplainLevel> levels;  // its prefix budgets for the address's family, broadest first
  bool as_destination = false;       // key is the address's bucket as a destination (key_by = "destination")
};

// Which peers reported the address while the running agent watched their reports.
struct ExplainPeers {
  enum class State { NotAsked, NoAgent, NoCluster, NoAnswer, Answered } state = State::NotAsked;
  uint64_t window_ms = 0;
  struct Report {
    std::string node, rule;
    uint64_t hits = 0, reports = 0;
  };
  std::vector<Report> reports;
};

struct Explanation {
  std::string address;
  dt_key addr{};          // the address as the maps hold it (IPv4-mapped), rule 0
  bool rules_on = false;  // the agent runs with --rules (a rules trie decides)
  // The lists (docs/lists.md): the allow list passes it before everything but the
  // cluster's own traffic; the deny list drops it before the rules (dry run: would-drop).
  bool allow_listed = false, deny_listed = false, dry_run = false;
  std::string prefix;  // the longest prefix of the live rules that holds it ("": none)
  std::vector<ExplainRule> rules;
  // The rules keyed by destination (key_by = "destination"), whatever the address matches
  // as a source: each with the bucket of the address as a destination (key with DT_KEY_DEST).
  std::vector<ExplainRule> as_destination;
  uint64_t now_ns = 0;  // CLOCK_MONOTONIC when the buckets were read
  ExplainPeers peers;
  bool bans_read = false;               // the ban maps could be read (pins of an agent with bans)
  std::optional<Ban> ban;               // the longest ban covering the address, if any (docs/bans.md)
  bool verified_read = false;           // the verified sources' map could be read (SYN cookies)
  std::optional<dt_verified> verified;  // its element for the address, expired or not
};

// Reads the address's element of the verified sources' map pinned in `pin_dir` into `e`
// (docs/rules.md "SYN cookies"); pins without that map leave e->verified_read false.
void read_verified_source(const std::string &pin_dir, Explanation *e);
// "until 9m 58s from now (12 packets skipped a prefix budget)", "expired ...", "no".
std::string verified_text(const Explanation &e);

// Reads the maps of `pin_dir` (opened in `maps`) about `address`. False with a sentence in
// *err if the address is not one or the maps cannot be read.
bool read_explanation(const PinnedMaps &maps, const std::string &pin_dir, const std::string &address, Explanation *out,
                      std::string *err);

std::string render_explanation_text(const Explanation &e);
std::string render_explanation_json(const Explanation &e);  // one line and a newline

}  // namespace dt
