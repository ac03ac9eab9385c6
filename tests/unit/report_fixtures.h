// report_fixtures.h - the reports the peer protocol and peer tracker tests build: an
// entry, a body under the default rule, a header, and the millisecond in nanoseconds.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "cluster/peer_protocol.h"
#include "common/address.h"

namespace dt::test {

constexpr uint64_t kMsNs = 1000000;

inline ReportEntry entry(const char *addr, uint64_t hits) {
  ReportEntry e{};
  EXPECT_TRUE(key_from_string(addr, &e.key)) << addr;
  e.hits = hits;
  return e;
}

// A report body with every entry under the default rule.
inline ReportBody body_of(std::vector<ReportEntry> entries) {
  ReportBody b;
  b.rules = {"default"};
  b.entries = std::move(entries);
  return b;
}

inline ReportHeader header(const char *id = "edge-1") {
  ReportHeader h;
  h.node_id = id;
  h.boot_id = 0x1122334455667788ull;
  h.epoch = 42;
  h.sent_unix_ms = 1700000000000ull;
  return h;
}

}  // namespace dt::test
