// report_types.h - the vocabulary hosts share: what a host served (per source, per
// tag), an adaptive rule's factor, and the names that identify hosts and rules. The
// wire format (cluster_core/peer_protocol.h) carries them; the dataplane, the adaptive
// rules and the tag table produce and consume them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dthrottle/common.h"

namespace dt {

constexpr size_t kMaxNodeIdLen = 64;
constexpr size_t kMaxRuleNameLen = 47;
constexpr size_t kMaxTagLen = 1024;
constexpr uint32_t kFactorOne = 1000000;  // factor_ppm of an unreduced rule

// A source's hits; in a report, key.rule indexes ReportBody::rules (the sender's rule names).
struct ReportEntry {
  dt_key key;
  uint64_t hits;
};

// The hits of `entries`, summed.
uint64_t hits_of(const std::vector<ReportEntry> &entries);

// A query-socket tag's hits.
struct TagHit {
  std::string tag;
  uint64_t hits = 0;
};

// The current factor of one adaptive rule (effective rate = rate x factor_ppm / 1e6).
// Rules are named, not numbered, as peers may order their rules differently.
struct RuleFactor {
  bool tag = false;                  // false: a packet rule, by name; true: a tag rule, by prefix
  std::string name;                  // packet rule name, or tag rule prefix ("" = catch-all)
  uint32_t factor_ppm = kFactorOne;  // millionths, 1..1000000
};

// True if `id` is a valid node id (and rule name charset): 1..64 chars of [A-Za-z0-9._:-].
bool valid_node_id(const std::string &id);

// Prefix budgets in reports: the buckets of a rule's prefix level travel in a group of
// their own named "RULE::pBITS" (e.g. "web::p24": the /24 level of rule web; IPv4 and
// IPv6 levels of the same length share the group, the entry's family tells them
// apart), so that peers map them by rule name and level. A rule name with prefix
// budgets is therefore at most kMaxRuleNameLen - kPrefixGroupSuffixMax characters, and
// no rule name may itself end like a level ("::p" and digits).
constexpr size_t kPrefixGroupSuffixMax = 6;  // "::p128"
std::string prefix_group_name(const std::string &rule, unsigned bits);
// Splits "RULE::pBITS" (BITS 1..128); false for any other name.
bool split_prefix_group_name(const std::string &name, std::string *rule, unsigned *bits);

// Destination buckets in reports (key_by = "destination"): a rule's destination buckets
// travel in a group of their own named "RULE::dst" (the entry's address is the
// destination), so that a peer debits its destination bucket, never a source's. A rule
// keyed by destination therefore has a name of at most kMaxRuleNameLen -
// kDestGroupSuffix.size() characters, and no rule name may end in "::dst".
constexpr std::string_view kDestGroupSuffix = "::dst";
std::string dest_group_name(const std::string &rule);
// Splits "RULE::dst"; false for any other name.
bool split_dest_group_name(const std::string &name, std::string *rule);

}  // namespace dt
