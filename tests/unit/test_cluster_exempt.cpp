// test_cluster_exempt.cpp - which (address, TCP port, side) entries the cluster's endpoints
// put in the cluster_exempt map (cluster_exempt_keys), and the log line of a change.
// Numeric hosts only: resolving them needs no name service.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/cluster_exempt.h"
#include "common/address.h"

namespace dt {
namespace {

std::vector<std::string> texts(const std::vector<dt_exempt_key> &keys) {
  std::vector<std::string> out;
  for (const auto &k : keys) out.push_back(exempt_key_to_string(k));
  return out;
}

TEST(ClusterExempt, APeerIsExemptFromItsPortAndToOurs) {
  std::string err;
  const auto keys = cluster_exempt_keys({"tcp://198.18.0.2:7700", "tcp://[2001:2::3]:7702"}, {}, "tcp://*:7710", &err);
  EXPECT_EQ(err, "");
  // Sorted by address as the map holds it: IPv4-mapped (::ffff:0:0/96) before 2001:2::/48.
  EXPECT_EQ(texts(keys), (std::vector<std::string>{"198.18.0.2 tcp from port 7700", "198.18.0.2 tcp to port 7710",
                                                   "2001:2::3 tcp from port 7702", "2001:2::3 tcp to port 7710"}));
}

TEST(ClusterExempt, WithoutListenOnlyThePeersPort) {
  std::string err;
  const auto keys = cluster_exempt_keys({"tcp://198.18.0.2:7700"}, {}, "", &err);
  EXPECT_EQ(texts(keys), (std::vector<std::string>{"198.18.0.2 tcp from port 7700"}));
}

TEST(ClusterExempt, AHubIsExemptFromItsFrontendAndBackend) {
  std::string err;
  const auto keys = cluster_exempt_keys({}, {"tcp://198.18.0.9:7701"}, "", &err);
  EXPECT_EQ(texts(keys), (std::vector<std::string>{"198.18.0.9 tcp from port 7701", "198.18.0.9 tcp from port 7702"}));
}

TEST(ClusterExempt, OneAddressTwiceIsOneSetOfEntries) {
  std::string err;
  const auto keys =
      cluster_exempt_keys({"tcp://198.18.0.2:7700", "tcp://198.18.0.2:7700"}, {"tcp://198.18.0.2:7699"}, "", &err);
  EXPECT_EQ(texts(keys), (std::vector<std::string>{"198.18.0.2 tcp from port 7699", "198.18.0.2 tcp from port 7700"}));
  dt_key a{}, b{};
  ASSERT_TRUE(key_from_string("198.18.0.2", &a));
  ASSERT_TRUE(key_from_string("198.18.0.3", &b));
  EXPECT_TRUE(exempts_address(keys, a));
  EXPECT_FALSE(exempts_address(keys, b));
}

TEST(ClusterExempt, ThePortBitmapsHoldEachSidesPorts) {
  std::string err;
  const auto keys = cluster_exempt_keys({"tcp://198.18.0.2:7700"}, {"tcp://198.18.0.9:65534"}, "tcp://*:64", &err);
  const dt_cluster_ports p = cluster_ports_of(keys);
  auto bit = [](const __u64 *bits, unsigned port) { return (bits[port / 64] >> (port % 64)) & 1; };
  unsigned from = 0, to = 0;
  for (unsigned port = 0; port < 65536; port++) from += bit(p.from_port, port), to += bit(p.to_port, port);
  EXPECT_EQ(from, 3u) << "7700, and the hub's 65534 and 65535";
  EXPECT_EQ(to, 1u) << "64 alone";
  EXPECT_TRUE(bit(p.from_port, 7700) && bit(p.from_port, 65534) && bit(p.from_port, 65535));
  EXPECT_TRUE(bit(p.to_port, 64));
}

TEST(ClusterExempt, AChangeIsDescribedAndNoChangeIsSilent) {
  std::string err;
  const auto before = cluster_exempt_keys({"tcp://198.18.0.2:7700"}, {}, "tcp://*:7700", &err);
  const auto after = cluster_exempt_keys({"tcp://198.18.0.3:7700"}, {}, "tcp://*:7700", &err);
  EXPECT_EQ(describe_exempt_change(before, before), "");
  EXPECT_EQ(describe_exempt_change(before, after),
            "the cluster's own connections pass unthrottled: 2 entries; +198.18.0.3 tcp from port 7700, "
            "+198.18.0.3 tcp to port 7700; -198.18.0.2 tcp from port 7700, -198.18.0.2 tcp to port 7700");
  EXPECT_EQ(describe_exempt_change({}, before),
            "the cluster's own connections pass unthrottled: 2 entries; +198.18.0.2 tcp from port 7700, "
            "+198.18.0.2 tcp to port 7700");
}

TEST(ClusterExempt, ALongChangeNamesTheFirstFew) {
  std::vector<std::string> peers;
  for (int i = 1; i <= 10; i++) peers.push_back("tcp://198.18.1." + std::to_string(i) + ":7700");
  std::string err;
  const auto keys = cluster_exempt_keys(peers, {}, "", &err);
  const std::string line = describe_exempt_change({}, keys);
  EXPECT_NE(line.find("10 entries"), std::string::npos) << line;
  EXPECT_NE(line.find(" and 2 more"), std::string::npos) << line;
}

}  // namespace
}  // namespace dt
