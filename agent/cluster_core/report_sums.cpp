// report_sums.cpp - hits summed by rule name, source and tag.
#include "cluster_core/report_sums.h"

#include <algorithm>

namespace dt {

dt_key ReportSums::keyed(uint32_t rule_id, const dt_key &k) const {
  dt_key out = k;
  out.rule = rule_id;
  return out;
}

void ReportSums::add(const ReportBody &body) {
  std::vector<uint32_t> ids(body.rules.size());
  for (size_t i = 0; i < body.rules.size(); i++) {
    auto [it, fresh] = rule_ids_.emplace(body.rules[i], static_cast<uint32_t>(rules_.size()));
    if (fresh) rules_.push_back(body.rules[i]);
    ids[i] = it->second;
  }
  for (const auto &e : body.entries) {
    if (e.key.rule >= ids.size()) continue;  // the decoder never gives one
    uint64_t &sum = entries_[keyed(ids[e.key.rule], e.key)];
    sum = std::min(sum + e.hits, kMaxHitsPerEntry);
  }
  for (const auto &t : body.tags) {
    uint64_t &sum = tags_[t.tag];
    sum = std::min(sum + t.hits, kMaxHitsPerEntry);
  }
}

uint64_t ReportSums::hits(const std::string &rule_name, const dt_key &key) const {
  const auto r = rule_ids_.find(rule_name);
  if (r == rule_ids_.end()) return 0;
  const auto it = entries_.find(keyed(r->second, key));
  return it == entries_.end() ? 0 : it->second;
}

uint64_t ReportSums::tag_hits(const std::string &tag) const {
  const auto it = tags_.find(tag);
  return it == tags_.end() ? 0 : it->second;
}

ReportBody ReportSums::take() {
  ReportBody body;
  body.rules = std::move(rules_);
  body.entries.reserve(entries_.size());
  for (const auto &[key, hits] : entries_) body.entries.push_back({key, hits});
  for (const auto &[tag, hits] : tags_) body.tags.push_back({tag, hits});
  *this = ReportSums{};
  return body;
}

}  // namespace dt
