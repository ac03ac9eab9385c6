// test_link_senders.cpp - which member a message's connection proves (cluster/link_senders.h):
// an address speaks for a node only when exactly one configured connection can have it.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "cluster/link_senders.h"

namespace {

using Links = std::vector<std::pair<std::string, std::string>>;

TEST(LinkSenders, EachMembersAddressSpeaksForIt) {
  dt::LinkSenders s;
  s.configure({{"tcp://198.18.0.2:7700", "web2"}, {"tcp://[2001:2::3]:7700", "web3"}});
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.node_of("198.18.0.2"), "web2");
  EXPECT_EQ(s.node_of("::ffff:198.18.0.2"), "web2") << "an IPv4-mapped address is the same address";
  EXPECT_EQ(s.node_of("2001:2:0:0:0:0:0:3"), "web3") << "IPv6 in any spelling";
  EXPECT_EQ(s.node_of("198.18.0.9"), "") << "no connection of ours";
  EXPECT_EQ(s.node_of(""), "") << "ZeroMQ gave no address";
  EXPECT_EQ(s.node_of("fe80::1%eth0"), "") << "not an address key_from_string reads: nobody";
}

TEST(LinkSenders, AnAddressOfTwoConnectionsOrAHubsSpeaksForNobody) {
  dt::LinkSenders s;
  s.configure({{"tcp://198.18.0.2:7700", "web2"},
               {"tcp://198.18.0.2:7701", "web4"},  // two members behind one address
               {"tcp://198.18.0.5:7700", "web5"},
               {"tcp://198.18.0.5:7800", ""},  // a hub beside web5: it relays anyone's messages
               {"tcp://198.18.0.6:7700", "web6"}});
  EXPECT_EQ(s.node_of("198.18.0.2"), "");
  EXPECT_EQ(s.node_of("198.18.0.5"), "");
  EXPECT_EQ(s.node_of("198.18.0.6"), "web6");
  // The hub first, then the member: the same.
  s.configure({{"tcp://198.18.0.5:7800", ""}, {"tcp://198.18.0.5:7700", "web5"}});
  EXPECT_EQ(s.node_of("198.18.0.5"), "");
  EXPECT_EQ(s.size(), 0u);
}

TEST(LinkSenders, OneHostNameAndNoAddressSpeaksForAnyone) {
  dt::LinkSenders s;
  s.configure({{"tcp://198.18.0.2:7700", "web2"}, {"tcp://web3.example:7700", "web3"}});
  EXPECT_EQ(s.size(), 0u) << "a name may resolve to any address, web2's included";
  EXPECT_EQ(s.node_of("198.18.0.2"), "");
  s.configure({{"tcp://198.18.0.2:7700", "web2"}});
  EXPECT_EQ(s.node_of("198.18.0.2"), "web2") << "configured anew: the name is gone";
  s.configure({});
  EXPECT_EQ(s.node_of("198.18.0.2"), "") << "without keys nothing is configured";
}

}  // namespace
