// fuzz_report.cpp - libFuzzer target for the peer report decoder.
//
// Whatever bytes arrive, decode_report() must not crash, read out of bounds (ASan),
// hit undefined behaviour (UBSan), or accept something inconsistent: an accepted
// message re-encodes to a message that decodes to the same header and entries.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "peer_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt::ReportHeader h;
  std::vector<dt::ReportEntry> entries;
  if (dt::decode_report(data, size, &h, &entries) != dt::DecodeError::None) {
    if (!entries.empty()) abort();  // a rejected message must yield nothing to debit
    return 0;
  }
  for (const auto &e : entries)
    if (e.hits == 0 || e.hits > dt::kMaxHitsPerEntry) abort();
  // Round trip (one part, large enough to hold everything the input held).
  auto msgs = dt::encode_report(h, h.seq, entries, dt::kMaxAcceptedBytes);
  if (msgs.size() != 1) abort();
  dt::ReportHeader h2;
  std::vector<dt::ReportEntry> e2;
  if (dt::decode_report(msgs[0].data(), msgs[0].size(), &h2, &e2) != dt::DecodeError::None) abort();
  if (h2.node_id != h.node_id || h2.seq != h.seq || h2.boot_id != h.boot_id || h2.epoch != h.epoch ||
      e2.size() != entries.size())
    abort();
  uint64_t a = 0, b = 0;
  for (const auto &e : entries) a += e.hits;
  for (const auto &e : e2) b += e.hits;
  if (a != b) abort();
  return 0;
}
