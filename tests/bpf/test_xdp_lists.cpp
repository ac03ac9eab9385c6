// test_xdp_lists.cpp - the allow and deny lists (docs/lists.md) as the XDP program
// applies them: the order cluster traffic > allow list > deny list > rules, both
// families, dry run, the per-CPU counters, and a swap that replaces a list whole.
//
// Lists are parsed with the agent's parser (parse_list_text) and put in force with
// publish_lists, as `agent --rules` and `agent reload` do; rules with parse_rules,
// compile_rules and publish_rules. Which step decided a packet is read from list_stats
// and rule_stats, never from the verdict alone.
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf_fixture.h"
#include "common/address.h"
#include "dataplane/list_maps.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "frames/packet_builder.h"
#include "list_fixture.h"
#include "prog_maps.h"
#include "rules/list_file.h"
#include "rules/rules.h"

namespace dt::test {
using namespace frames;
namespace {

class XdpLists : public RuleMapsFixture {
 protected:
  void SetUp() override {
    RuleMapsFixture::SetUp();
    if (HasFatalFailure()) return;
    lists_ = ListMapFds{map_fd(DT_MAP_LISTS_V4), map_fd(DT_MAP_LISTS_V6), map_fd(DT_MAP_FEATURES)};
  }

  // Rules `toml` over a default rule of 1000/s, burst 1000 (passes what the tests send).
  void rules(const std::string &toml) {
    RuleSet rs = default_rules(1000, 1000);
    LoadedRules r;
    std::string err;
    ASSERT_TRUE(parse_rules("version = 1\n" + toml, "test.toml", &rs, &err)) << err;
    ASSERT_TRUE(compile_rules(rs, &r.compiled, &err)) << err;
    const int rc = publish_rules(maps_, r.compiled.policies, r.compiled.lpm, {});
    ASSERT_EQ(rc, 0) << "publish_rules: " << strerror(-rc);
  }

  static ListPrefixes list(const std::string &text) { return parse_list_ok(text); }
  void lists(const std::string &allow, const std::string &deny) { publish_list_texts(lists_, allow, deny); }

  dt_list_stats counters() { return summed_per_cpu<dt_list_stats>(map_fd(DT_MAP_LIST_STATS), 0); }
  // The three counters at once, for one comparison that shows them all when it fails.
  std::string counts() {
    const dt_list_stats c = counters();
    return "allowed " + std::to_string(c.allowed) + ", denied " + std::to_string(c.denied) + ", would_drop " +
           std::to_string(c.would_drop);
  }
  dt_rule_stats rule_counters(uint32_t rule) { return summed_per_cpu<dt_rule_stats>(rule_stats_fd_, rule); }

  ListMapFds lists_;
};

TEST_F(XdpLists, DenyListDropsBothFamiliesAndCountsPerList) {
  rules("");
  lists("", "198.18.5.0/24\n198.18.0.0/16\n2001:2:0:5::/64\n");
  EXPECT_EQ(run(v4("198.18.5.7")), XDP_DROP);
  EXPECT_EQ(run(v4("198.18.200.1")), XDP_DROP) << "the /16 holds it too";
  EXPECT_EQ(run(v4("198.19.0.1")), XDP_PASS) << "outside every listed prefix";
  EXPECT_EQ(run(v6("2001:2:0:5::99")), XDP_DROP);
  EXPECT_EQ(run(v6("2001:2:0:6::1")), XDP_PASS);
  EXPECT_EQ(counts(), "allowed 0, denied 3, would_drop 0");
  EXPECT_EQ(rule_counters(0).passed, 2u) << "only unlisted sources reach the rules";
}

TEST_F(XdpLists, AllowListBeatsDenyRuleAndDenyList) {
  rules(
      "[[rule]]\nname = \"block\"\ncidr = \"198.18.0.0/15\"\naction = \"deny\"\n"
      "[[rule]]\nname = \"block6\"\ncidr = \"2001:2::/48\"\naction = \"deny\"\n");
  lists("198.18.1.1\n198.18.9.0/24\n2001:2::7\n", "198.18.9.0/24\n");
  EXPECT_EQ(run(v4("198.18.1.1")), XDP_PASS) << "allow list beats a deny rule";
  EXPECT_EQ(run(v4("198.18.9.9")), XDP_PASS) << "allow list beats the deny list";
  EXPECT_EQ(run(v6("2001:2::7")), XDP_PASS);
  EXPECT_EQ(run(v4("198.18.1.2")), XDP_DROP) << "not on the allow list: the deny rule drops it";
  EXPECT_EQ(run(v6("2001:2::8")), XDP_DROP);
  EXPECT_EQ(counts(), "allowed 3, denied 0, would_drop 0");
}

TEST_F(XdpLists, DenyListBeatsAnAllowRule) {
  rules("[[rule]]\nname = \"office\"\ncidr = \"198.18.0.0/15\"\naction = \"allow\"\n");
  lists("", "198.18.3.3\n");
  EXPECT_EQ(run(v4("198.18.3.3")), XDP_DROP);
  EXPECT_EQ(run(v4("198.18.3.4")), XDP_PASS);
  EXPECT_EQ(counters().denied, 1u);
}

TEST_F(XdpLists, DryRunTurnsDenyListDropsIntoWouldDrops) {
  rules("");
  lists("", "198.18.5.0/24\n2001:2::/48\n");
  ASSERT_EQ(update_config_flags(config_fd(), DT_CFG_DRY_RUN, 0, 0), 0);
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_PASS);
  EXPECT_EQ(run(v6("2001:2::1")), XDP_PASS);
  EXPECT_EQ(counts(), "allowed 0, denied 0, would_drop 2");
  ASSERT_EQ(update_config_flags(config_fd(), 0, DT_CFG_DRY_RUN, 0), 0);
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_DROP) << "enforcing again";
  EXPECT_EQ(counts(), "allowed 0, denied 1, would_drop 2");
}

TEST_F(XdpLists, ASwapReplacesAListWholeAndAnEmptyListRemovesIt) {
  rules("");
  lists("", "198.18.5.0/24\n");
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_DROP);
  std::string err;
  ASSERT_EQ(publish_lists(lists_, list(""), list("198.18.6.0/24\n"), nullptr, nullptr, &err), 0) << err;
  EXPECT_EQ(run(v4("198.18.5.1")), XDP_PASS) << "the old list is gone";
  EXPECT_EQ(run(v4("198.18.6.1")), XDP_DROP) << "the new one is in force";
  const ListSize size = read_list_size(lists_, DT_LIST_DENY);
  EXPECT_EQ(size.v4, 1u);
  EXPECT_EQ(size.v6, 0u);
  uint8_t addr[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 6, 9};
  EXPECT_EQ(list_holds(lists_, DT_LIST_DENY, addr), 1);
  addr[14] = 5;
  EXPECT_EQ(list_holds(lists_, DT_LIST_DENY, addr), 0);
  ASSERT_EQ(publish_lists(lists_, list(""), list(""), nullptr, nullptr, &err), 0) << err;
  EXPECT_EQ(run(v4("198.18.6.1")), XDP_PASS);
  EXPECT_EQ(read_list_size(lists_, DT_LIST_DENY).v4, 0u);
}

TEST_F(XdpLists, AnUnchangedListIsNotRebuilt) {
  rules("");
  const ListPrefixes deny = list("198.18.5.0/24\n");
  std::string err;
  ASSERT_EQ(publish_lists(lists_, list(""), deny, nullptr, nullptr, &err), 0) << err;
  uint32_t id_before = 0, id_after = 0, slot = DT_LIST_DENY;
  ASSERT_EQ(bpf_map_lookup_elem(lists_.v4, &slot, &id_before), 0);
  const ListPrefixes none;
  ASSERT_EQ(publish_lists(lists_, none, deny, &none, &deny, &err), 0) << err;
  ASSERT_EQ(bpf_map_lookup_elem(lists_.v4, &slot, &id_after), 0);
  EXPECT_EQ(id_before, id_after) << "an equal list keeps its trie";
}

// A list is the union of its prefixes: the first and last address of each prefix are on
// it, the ones just outside are not, and overlapping or adjacent prefixes (merged into one
// range when loaded) decide as their union. `agent explain` (list_holds) agrees with the
// packet path on every address, and the list's size is its prefixes, not its ranges.
TEST_F(XdpLists, PrefixEdgesAndMergedPrefixesDecideAsTheirUnion) {
  rules("");
  lists("",
        "198.18.4.0/23\n198.18.6.0/24\n198.18.4.128/25\n198.18.9.9\n"
        "2001:2:0:4::/64\n2001:2:0:5::/64\n2001:2:0:4:8000::/65\n2001:2:0:9::5\n");
  const struct {
    const char *src;
    bool v6, listed;
  } cases[] = {{"198.18.3.255", false, false}, {"198.18.4.0", false, true},
               {"198.18.5.255", false, true},  {"198.18.6.0", false, true},
               {"198.18.6.255", false, true},  {"198.18.7.0", false, false},
               {"198.18.9.8", false, false},   {"198.18.9.9", false, true},
               {"198.18.9.10", false, false},  {"2001:2:0:3:ffff:ffff:ffff:ffff", true, false},
               {"2001:2:0:4::", true, true},   {"2001:2:0:5:ffff:ffff:ffff:ffff", true, true},
               {"2001:2:0:6::", true, false},  {"2001:2:0:9::4", true, false},
               {"2001:2:0:9::5", true, true},  {"2001:2:0:9::6", true, false}};
  uint64_t listed = 0;
  for (const auto &c : cases) {
    EXPECT_EQ(run(c.v6 ? v6(c.src) : v4(c.src)), c.listed ? XDP_DROP : XDP_PASS) << c.src;
    listed += c.listed;
    dt_key k{};
    ASSERT_TRUE(key_from_string(c.src, &k)) << c.src;
    EXPECT_EQ(list_holds(lists_, DT_LIST_DENY, k.addr), c.listed ? 1 : 0) << "explain disagrees on " << c.src;
  }
  EXPECT_EQ(counters().denied, listed);
  const ListSize size = read_list_size(lists_, DT_LIST_DENY);
  EXPECT_EQ(size.v4, 4u) << "the prefixes loaded, though they make 2 ranges";
  EXPECT_EQ(size.v6, 4u);
}

TEST_F(XdpLists, SlashZeroListsEveryAddressOfItsFamilyOnly) {
  rules("");
  lists("", "0.0.0.0/0\n");
  for (const char *src : {"198.18.0.0", "198.18.0.1", "198.19.255.255"}) EXPECT_EQ(run(v4(src)), XDP_DROP) << src;
  EXPECT_EQ(run(v6("2001:2::1")), XDP_PASS) << "the IPv6 slot is empty";
  lists("::/0\n", "");
  EXPECT_EQ(run(v4("198.18.0.1")), XDP_PASS) << "the deny list is gone";
  EXPECT_EQ(run(v6("2001:2::1")), XDP_PASS);
  EXPECT_EQ(run(v6("2001:2:0:ffff::1")), XDP_PASS);
  EXPECT_EQ(counters().allowed, 2u) << "both IPv6 sources on the allow list";
}

// A reload swaps in a set of another size (another array): from one range to thousands
// and back, the new list is in force whole each time.
TEST_F(XdpLists, ASwapBetweenSetsOfAnySizeKeepsEachListWhole) {
  rules("");
  lists("", "198.18.5.5\n2001:2::5\n");
  std::string big;
  for (int i = 0; i < 4096; i += 2)
    big += "198.18." + std::to_string(i / 256 + 16) + "." + std::to_string(i % 256) + "\n";
  big += "2001:2::/120\n";
  lists("", big);
  EXPECT_EQ(run(v4("198.18.5.5")), XDP_PASS) << "the old list is gone";
  EXPECT_EQ(run(v4("198.18.16.0")), XDP_DROP);
  EXPECT_EQ(run(v4("198.18.16.1")), XDP_PASS) << "odd addresses are not on it";
  EXPECT_EQ(run(v4("198.18.31.254")), XDP_DROP);
  EXPECT_EQ(run(v6("2001:2::5")), XDP_DROP);
  EXPECT_EQ(read_list_size(lists_, DT_LIST_DENY).v4, 2048u);
  lists("", "198.18.5.5\n");
  EXPECT_EQ(run(v4("198.18.16.0")), XDP_PASS);
  EXPECT_EQ(run(v4("198.18.5.5")), XDP_DROP);
  EXPECT_EQ(run(v6("2001:2::5")), XDP_PASS);
}

// 1,000,000 prefixes per family (the size docs/lists.md measures) load, and their first,
// middle and last prefix are enforced. IPv6: 2001:2:0:1::/128s. IPv4 holds no million test
// addresses (198.18.0.0/15 is 131,072): the mass is 10.x.y.z /32s (never in a frame), and
// entries 0, 500,000 and 999,999 are 198.18.1.0, .1 and .2, which the frames come from.
TEST_F(XdpLists, AMillionPrefixesPerFamilyLoadAndAreEnforced) {
  constexpr uint32_t kN = 1'000'000;
  rules("");
  ListPrefixes deny;
  deny.v4.reserve(kN);
  deny.v6.reserve(kN);
  for (uint32_t i = 0; i < kN; i++) {
    const bool probe = i == 0 || i == kN / 2 || i == kN - 1;
    deny.v4.push_back(
        probe ? dt_list_v4_key{32,
                               {198, 18, 1,
                                static_cast<uint8_t>(i == 0        ? 0
                                                     : i == kN / 2 ? 1
                                                                   : 2)}}
              : dt_list_v4_key{
                    32, {10, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)}});
    deny.v6.push_back(dt_list_v6_key{128,
                                     {0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, static_cast<uint8_t>(i >> 16),
                                      static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)}});
  }
  std::string err;
  ASSERT_EQ(publish_lists(lists_, ListPrefixes{}, deny, nullptr, nullptr, &err), 0) << err;
  const ListSize size = read_list_size(lists_, DT_LIST_DENY);
  EXPECT_EQ(size.v4, kN);
  EXPECT_EQ(size.v6, kN);
  // i = 0, 500,000 (0x07a120) and 999,999 (0x0f423f).
  for (const char *src : {"198.18.1.0", "198.18.1.1", "198.18.1.2"}) EXPECT_EQ(run(v4(src)), XDP_DROP) << src;
  for (const char *src : {"2001:2:0:1::", "2001:2:0:1::7:a120", "2001:2:0:1::f:423f"})
    EXPECT_EQ(run(v6(src)), XDP_DROP) << src;
  EXPECT_EQ(run(v4("198.18.1.3")), XDP_PASS) << "on no list";
  EXPECT_EQ(run(v6("2001:2:0:1::f:4240")), XDP_PASS) << "one past the last";
  EXPECT_EQ(counters().denied, 6u);
}

}  // namespace
}  // namespace dt::test
