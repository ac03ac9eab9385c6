// list_fixture.h - allow and deny lists published the way the agent's loader does it
// (agent/dataplane/list_maps.h), for the tests where lists meet the packet path
// (test_xdp_lists.cpp, test_xdp_features.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "dataplane/list_maps.h"
#include "rules/list_file.h"

namespace dt::test {

// A list file's text, parsed as the agent parses the file (a parse error fails the test).
inline ListPrefixes parsed_list(const std::string &text) {
  ListPrefixes p;
  std::string err;
  EXPECT_TRUE(parse_list_text(text, "list.txt", &p, &err)) << err;
  return p;
}

// The allow and deny lists (each a list file's text) swapped into `fds` whole.
inline void publish_list_texts(const ListMapFds &fds, const std::string &allow, const std::string &deny) {
  std::string err;
  ASSERT_EQ(publish_lists(fds, parsed_list(allow), parsed_list(deny), nullptr, nullptr, &err), 0) << err;
}

}  // namespace dt::test
