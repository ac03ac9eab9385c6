// list_fixtures.h - allow and deny lists as the list and range-set tests read them.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "rules/list_file.h"

namespace dt::test {

// The prefixes of a list file's `text` (as "l.txt"); a failure if it is refused.
inline ListPrefixes parse_list_ok(const std::string &text) {
  ListPrefixes p;
  std::string err;
  EXPECT_TRUE(parse_list_text(text, "l.txt", &p, &err)) << err;
  return p;
}

}  // namespace dt::test
