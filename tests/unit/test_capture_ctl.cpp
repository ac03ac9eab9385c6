// test_capture_ctl.cpp - the capture control as agent capture writes it for the kernel
// (capture_ctl_for, agent/capture/capture_control.h): filters, and the source prefix as an
// address and mask in the 16-byte IPv4-mapped form the packet path compares against.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "bans/ban_types.h"
#include "capture/capture_control.h"

namespace {

dt::CaptureFilter with_source(const std::string &prefix) {
  dt::CaptureFilter f;
  f.has_source = true;
  std::string err;
  EXPECT_TRUE(dt::parse_ban_prefix(prefix, &f.source, &err)) << err;
  return f;
}

TEST(CaptureCtl, NoFilterByDefault) {
  const dt_capture_ctl c = dt::capture_ctl_for(dt::CaptureFilter{}, 7, 123);
  EXPECT_EQ(c.lease, 7u);
  EXPECT_EQ(c.expires_ns, 123u);
  EXPECT_EQ(c.filters, 0u);
  EXPECT_EQ(c.verdicts, DT_CAP_DROPPED | DT_CAP_WOULD_DROP) << "dropped and would-drop unless asked otherwise";
  EXPECT_EQ(c.snaplen, 128u);
  EXPECT_EQ(c.per_cpu_rate, DT_CAPTURE_DEFAULT_RATE);
}

TEST(CaptureCtl, RuleFilter) {
  dt::CaptureFilter f;
  f.has_rule = true;
  f.rule = DT_CAP_RULE_BAN;
  const dt_capture_ctl c = dt::capture_ctl_for(f, 1, 1);
  EXPECT_EQ(c.filters, DT_CAP_FILTER_RULE);
  EXPECT_EQ(c.rule, DT_CAP_RULE_BAN);
}

TEST(CaptureCtl, Ipv4PrefixIsMaskedInTheMappedForm) {
  const dt_capture_ctl c = dt::capture_ctl_for(with_source("198.18.5.7/22"), 1, 1);
  EXPECT_EQ(c.filters, DT_CAP_FILTER_SOURCE);
  const uint8_t mask[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfc, 0};
  const uint8_t src[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 4, 0};
  EXPECT_EQ(memcmp(c.src_mask, mask, 16), 0) << "96 bits of the ::ffff: form, then the /22";
  EXPECT_EQ(memcmp(c.src, src, 16), 0) << "198.18.4.0, host bits cleared";
}

TEST(CaptureCtl, Ipv6PrefixAndSingleAddress) {
  const dt_capture_ctl c = dt::capture_ctl_for(with_source("2001:2:0:7::/64"), 1, 1);
  for (int i = 0; i < 16; i++) EXPECT_EQ(c.src_mask[i], i < 8 ? 0xff : 0) << "byte " << i;
  const dt_capture_ctl one = dt::capture_ctl_for(with_source("198.18.5.7"), 1, 1);
  for (int i = 0; i < 16; i++) EXPECT_EQ(one.src_mask[i], 0xff) << "an address alone is a /32: byte " << i;
  EXPECT_EQ(one.src[15], 7);
}

}  // namespace
