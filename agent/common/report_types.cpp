// report_types.cpp - names shared by hosts.
#include "common/report_types.h"

#include <cctype>

namespace dt {

bool valid_node_id(const std::string &id) {
  if (id.empty() || id.size() > kMaxNodeIdLen) return false;
  for (char c : id)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-'))
      return false;
  return true;
}

}  // namespace dt
