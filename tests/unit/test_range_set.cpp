// test_range_set.cpp - the lists' range sets (dataplane/range_set.h): prefixes merged into
// sorted disjoint ranges, the index over each bucket's slice, the search the packet path
// does (checked against a plain scan of the prefixes), and the prefixes read back.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dataplane/range_set.h"
#include "list_fixtures.h"
#include "rules/list_file.h"

namespace dt {
namespace {

using test::parse_list_ok;

uint32_t ip4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) { return (uint32_t{a} << 24) | (b << 16) | (c << 8) | d; }

// Whether any of `keys` covers `addr` (the answer a trie gave).
bool scan4(const std::vector<dt_list_v4_key> &keys, uint32_t addr) {
  for (const auto &k : keys) {
    const uint32_t m = k.prefixlen == 0 ? 0 : ~uint32_t{0} << (32 - k.prefixlen);
    if ((addr & m) == (addr4_of(k.addr) & m)) return true;
  }
  return false;
}

bool scan6(const std::vector<dt_list_v6_key> &keys, Addr6 addr) {
  for (const auto &k : keys) {
    const Addr6 m = k.prefixlen == 0 ? 0 : ~Addr6{0} << (128 - k.prefixlen);
    if ((addr & m) == (addr6_of(k.addr) & m)) return true;
  }
  return false;
}

bool holds4(const std::vector<dt_list_v4_elem> &e, uint32_t a) { return range_set_holds(e.data(), e.size(), a); }
bool holds6(const std::vector<dt_list_v6_elem> &e, Addr6 a) { return range_set_holds(e.data(), e.size(), a); }

TEST(RangeSet, OverlappingAndAdjacentPrefixesMerge) {
  const ListPrefixes p =
      parse_list_ok("198.18.0.0/24\n198.18.1.0/24\n198.18.0.128/25\n198.18.3.0/24\n10.0.0.1\n10.0.0.2\n");
  const std::vector<Range4> r = merge_prefixes(p.v4);
  ASSERT_EQ(r.size(), 3u) << "10.0.0.1-2 one range, 198.18.0-1 one, 198.18.3 one";
  EXPECT_EQ(r[0], (Range4{ip4(10, 0, 0, 1), ip4(10, 0, 0, 2)}));
  EXPECT_EQ(r[1], (Range4{ip4(198, 18, 0, 0), ip4(198, 18, 1, 255)}));
  EXPECT_EQ(r[2], (Range4{ip4(198, 18, 3, 0), ip4(198, 18, 3, 255)}));
  const auto back = range_prefixes(r);
  ASSERT_EQ(back.size(), 4u) << "10.0.0.1/32, 10.0.0.2/32, 198.18.0.0/23, 198.18.3.0/24";
  EXPECT_EQ(back[2].prefixlen, 23u);
  EXPECT_EQ(list_prefix_string(back[2]), "198.18.0.0/23");
}

TEST(RangeSet, EdgesOfPrefixesBothFamilies) {
  const ListPrefixes p = parse_list_ok("198.18.4.0/22\n255.255.255.255\n0.0.0.0/32\n2001:2::/48\n2001:2:1::1\n");
  const auto e4 = build_range_set(p.v4);
  const auto e6 = build_range_set(p.v6);
  EXPECT_FALSE(holds4(e4, ip4(198, 18, 3, 255)));
  EXPECT_TRUE(holds4(e4, ip4(198, 18, 4, 0)));
  EXPECT_TRUE(holds4(e4, ip4(198, 18, 7, 255)));
  EXPECT_FALSE(holds4(e4, ip4(198, 18, 8, 0)));
  EXPECT_TRUE(holds4(e4, 0xffffffffu)) << "a /32 at the top of the space";
  EXPECT_TRUE(holds4(e4, 0)) << "a /32 at the bottom";
  EXPECT_FALSE(holds4(e4, 1));
  const Addr6 net = addr6_of(p.v6[0].addr);
  EXPECT_TRUE(holds6(e6, net));
  EXPECT_TRUE(holds6(e6, net | ((Addr6{1} << 80) - 1))) << "last of the /48";
  EXPECT_FALSE(holds6(e6, net - 1));
  EXPECT_FALSE(holds6(e6, net + (Addr6{1} << 80))) << "first past the /48 (2001:2:1::)";
  EXPECT_TRUE(holds6(e6, net + (Addr6{1} << 80) + 1)) << "the /128";
  EXPECT_FALSE(holds6(e6, net + (Addr6{1} << 80) + 2));
  EXPECT_EQ(range_set_prefixes(e4.data(), e4.size()), 3u);
  EXPECT_EQ(range_set_prefixes(e6.data(), e6.size()), 2u);
}

TEST(RangeSet, SlashZeroHoldsEverything) {
  const ListPrefixes p = parse_list_ok("0.0.0.0/0\n198.18.0.1\n::/0\n");
  const auto e4 = build_range_set(p.v4);
  const auto e6 = build_range_set(p.v6);
  for (uint32_t a : {0u, 1u, ip4(198, 18, 0, 1), 0x7fffffffu, 0xffffffffu}) EXPECT_TRUE(holds4(e4, a)) << a;
  for (Addr6 a : {Addr6{0}, Addr6{1}, ~Addr6{0}, Addr6{1} << 127}) EXPECT_TRUE(holds6(e6, a));
  EXPECT_EQ(merge_prefixes(p.v4).size(), 1u);
}

TEST(RangeSet, AnEmptyListIsNoSetAndAMalformedOneHoldsNothing) {
  EXPECT_TRUE(build_range_set(std::vector<dt_list_v4_key>{}).empty());
  EXPECT_TRUE(build_range_set(std::vector<dt_list_v6_key>{}).empty());
  EXPECT_FALSE(range_set_holds(static_cast<const dt_list_v4_elem *>(nullptr), 0, 0));
  std::vector<dt_list_v4_elem> bad = build_range_set(parse_list_ok("198.18.0.1\n").v4);
  bad[0].a = DT_LIST_INDEX_BITS_MAX + 1;
  EXPECT_FALSE(holds4(bad, ip4(198, 18, 0, 1))) << "index bits past the maximum";
  bad.resize(1);
  bad[0].a = 2;
  EXPECT_FALSE(holds4(bad, ip4(198, 18, 0, 1))) << "an index past the elements";
}

TEST(RangeSet, IndexBitsGrowWithTheRangesUpToTheMaximum) {
  EXPECT_EQ(range_index_bits(1), 1u);
  EXPECT_EQ(range_index_bits(1000), 10u);
  EXPECT_EQ(range_index_bits(1'000'000), 20u);
  EXPECT_EQ(range_index_bits(4u << 20), DT_LIST_INDEX_BITS_MAX);
}

// Random prefixes clustered in a few networks (so that slices are long and the IPv6 set
// has a common prefix), checked against a scan at random addresses and at every range's
// edges, and read back as the same set.
TEST(RangeSet, SearchAgreesWithAScanOfThePrefixes) {
  std::mt19937_64 rng(7);
  std::vector<dt_list_v4_key> k4;
  std::vector<dt_list_v6_key> k6;
  for (int i = 0; i < 3000; i++) {
    const uint32_t a = (i % 3 == 0 ? ip4(198, 18, 0, 0) : ip4(203, 0, 0, 0)) | (rng() & 0x1ffff);
    const uint32_t len = 14 + rng() % 19;
    dt_list_v4_key k{len, {}};
    const uint32_t m = a & (~uint32_t{0} << (32 - len));
    for (int b = 0; b < 4; b++) k.addr[b] = static_cast<uint8_t>(m >> (24 - 8 * b));
    k4.push_back(k);
    dt_list_v6_key k6i{static_cast<uint32_t>(40 + rng() % 89), {0x20, 0x01, 0, 2}};
    for (int b = 4; b < 16; b++) k6i.addr[b] = static_cast<uint8_t>(b < 6 ? rng() & 1 : rng());
    const Addr6 m6 = addr6_of(k6i.addr) & (~Addr6{0} << (128 - k6i.prefixlen));
    for (int b = 0; b < 16; b++) k6i.addr[b] = static_cast<uint8_t>(m6 >> (120 - 8 * b));
    k6.push_back(k6i);
  }
  const auto e4 = build_range_set(k4);
  const auto e6 = build_range_set(k6);
  std::vector<uint32_t> probes4;
  for (const Range4 &r : merge_prefixes(k4)) probes4.insert(probes4.end(), {r.lo - 1, r.lo, r.hi, r.hi + 1});
  for (int i = 0; i < 20000; i++)
    probes4.push_back((i & 1 ? ip4(198, 18, 0, 0) : ip4(203, 0, 0, 0)) | (rng() & 0x3ffff));
  for (uint32_t a : probes4) ASSERT_EQ(holds4(e4, a), scan4(k4, a)) << a;
  std::vector<Addr6> probes6;
  for (const Range6 &r : merge_prefixes(k6)) probes6.insert(probes6.end(), {r.lo - 1, r.lo, r.hi, r.hi + 1});
  for (int i = 0; i < 20000; i++) probes6.push_back(addr6_of(k6[i % k6.size()].addr) + (rng() >> (i % 64)));
  for (Addr6 a : probes6) ASSERT_EQ(holds6(e6, a), scan6(k6, a));
  EXPECT_EQ(range_set_ranges(e4.data(), e4.size()), merge_prefixes(k4));
  EXPECT_EQ(range_set_ranges(e6.data(), e6.size()), merge_prefixes(k6));
  EXPECT_EQ(merge_prefixes(range_prefixes(merge_prefixes(k6))), merge_prefixes(k6)) << "read back, the same set";
}

}  // namespace
}  // namespace dt
