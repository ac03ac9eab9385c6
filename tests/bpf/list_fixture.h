// list_fixture.h - allow and deny lists published the way the agent's loader does it
// (agent/dataplane/list_maps.h), for the tests where lists meet the packet path
// (test_xdp_lists.cpp, test_xdp_features.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "../unit/list_fixtures.h"  // parse_list_ok: a list file's text, as the agent parses it
#include "dataplane/list_maps.h"

namespace dt::test {

// The allow and deny lists (each a list file's text) swapped into `fds` whole.
inline void publish_list_texts(const ListMapFds &fds, const std::string &allow, const std::string &deny) {
  std::string err;
  ASSERT_EQ(publish_lists(fds, parse_list_ok(allow), parse_list_ok(deny), nullptr, nullptr, &err), 0) << err;
}

}  // namespace dt::test
