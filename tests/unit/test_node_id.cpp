// test_node_id.cpp - the default node id: host name plus a hash of the interface's MAC.
#include <gtest/gtest.h>

#include "cli/cli.h"
#include "common/node_id.h"
#include "common/report_types.h"

namespace dt {
namespace {

const uint8_t kMac1[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
const uint8_t kMac2[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

TEST(NodeId, SameHostNameDifferentMacsDiffer) {
  const std::string a = make_node_id("web1", kMac1, 6, "198.18.0.1");
  const std::string b = make_node_id("web1", kMac2, 6, "198.18.0.1");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("web1-", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("web1-").size() + 6) << a;
  EXPECT_TRUE(valid_node_id(a)) << a;
  EXPECT_TRUE(valid_node_id(b)) << b;
}

TEST(NodeId, StableForOneMac) {
  EXPECT_EQ(make_node_id("web1", kMac1, 6, ""), make_node_id("web1", kMac1, 6, "other"));
}

TEST(NodeId, WithoutMacTheAddressDecides) {
  const uint8_t zero[6] = {};
  const std::string a = make_node_id("web1", zero, 6, "198.18.0.1");
  const std::string b = make_node_id("web1", nullptr, 0, "198.18.0.2");
  EXPECT_NE(a, b);
  EXPECT_EQ(a, make_node_id("web1", nullptr, 0, "198.18.0.1"));
  EXPECT_EQ(make_node_id("web1", nullptr, 0, ""), "web1");
}

TEST(NodeId, LongOrInvalidHostNamesStillGiveAValidId) {
  const std::string long_host(64, 'h');
  const std::string id = make_node_id(long_host, kMac1, 6, "");
  EXPECT_TRUE(valid_node_id(id)) << id;
  EXPECT_EQ(id.size(), 64u);
  EXPECT_EQ(make_node_id("bad host!", kMac1, 6, "").rfind("dthrottle-", 0), 0u);
}

TEST(NodeId, DefaultForLoopbackHasTheHostName) {
  // lo has an all-zero MAC and 127.0.0.1: the hash comes from the address.
  const std::string id = default_node_id("lo");
  EXPECT_TRUE(valid_node_id(id)) << id;
  EXPECT_NE(id.find('-'), std::string::npos) << id;
}

TEST(NodeId, ExplicitNodeIdWins) {
  const char *argv[] = {"agent", "--iface", "lo", "--rate", "1", "--burst", "1", "--node-id", "edge-7"};
  RunOptions o;
  std::string err;
  ASSERT_EQ(parse_run_options(9, const_cast<char **>(argv), &o, &err), ParseOutcome::Ok) << err;
  EXPECT_EQ(o.node_id, "edge-7");
  const char *argv2[] = {"agent", "--iface", "lo", "--rate", "1", "--burst", "1"};
  RunOptions d;
  ASSERT_EQ(parse_run_options(7, const_cast<char **>(argv2), &d, &err), ParseOutcome::Ok) << err;
  EXPECT_EQ(d.node_id, default_node_id("lo"));
}

}  // namespace
}  // namespace dt
