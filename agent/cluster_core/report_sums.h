// report_sums.h - hits summed by rule name, source and tag over several reports: what a
// summing hub adds up each period (agent/hub/aggregator.h), and what an agent subtracts
// of its own hits from a hub's sums (cluster_core/aggregate_intake.h). Rules travel by name
// (peers may number them differently), so sums are kept by name too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster_core/peer_protocol.h"
#include "common/key_hash.h"

namespace dt {

class ReportSums {
 public:
  // Adds every entry and tag of `body` (its rules by name).
  void add(const ReportBody &body);
  // The hits summed for `name`'s source `key` (key.rule ignored), or a tag's.
  uint64_t hits(const std::string &rule_name, const dt_key &key) const;
  uint64_t tag_hits(const std::string &tag) const;
  // The sums as one report body (rules by first appearance), and empty again.
  ReportBody take();
  bool empty() const { return entries_.empty() && tags_.empty(); }
  size_t entries() const { return entries_.size(); }

 private:
  dt_key keyed(uint32_t rule_id, const dt_key &k) const;
  std::map<std::string, uint32_t> rule_ids_;
  std::vector<std::string> rules_;
  std::unordered_map<dt_key, uint64_t, KeyHash, KeyEq> entries_;  // key.rule: an index into rules_
  std::map<std::string, uint64_t> tags_;
};

}  // namespace dt
