// report_types.cpp - names shared by hosts.
#include "common/report_types.h"

#include <cctype>
#include <string>

namespace dt {

uint64_t hits_of(const std::vector<ReportEntry> &entries) {
  uint64_t n = 0;
  for (const ReportEntry &e : entries) n += e.hits;
  return n;
}

bool valid_node_id(const std::string &id) {
  if (id.empty() || id.size() > kMaxNodeIdLen) return false;
  for (char c : id)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-')) return false;
  return true;
}

std::string prefix_group_name(const std::string &rule, unsigned bits) { return rule + "::p" + std::to_string(bits); }

bool split_prefix_group_name(const std::string &name, std::string *rule, unsigned *bits) {
  const size_t at = name.rfind("::p");
  if (at == std::string::npos || at == 0) return false;
  const std::string digits = name.substr(at + 3);
  if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0')) return false;
  for (char c : digits)
    if (!isdigit(static_cast<unsigned char>(c))) return false;
  const unsigned v = static_cast<unsigned>(std::stoul(digits));
  if (v < 1 || v > 128) return false;
  *rule = name.substr(0, at);
  *bits = v;
  return true;
}

std::string dest_group_name(const std::string &rule) { return rule + std::string(kDestGroupSuffix); }

bool split_dest_group_name(const std::string &name, std::string *rule) {
  if (name.size() <= kDestGroupSuffix.size() || !name.ends_with(kDestGroupSuffix)) return false;
  *rule = name.substr(0, name.size() - kDestGroupSuffix.size());
  return true;
}

}  // namespace dt
