// fuzz_report.cpp - libFuzzer target for the peer report decoder.
//
// Whatever bytes arrive, decode_report() must not crash, read out of bounds (ASan),
// hit undefined behaviour (UBSan), or accept something inconsistent: an accepted
// message re-encodes to a message that decodes to the same header, entries and tags.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "peer_protocol.h"

namespace {
uint64_t total(const dt::ReportBody &b) {
  uint64_t n = 0;
  for (const auto &e : b.entries) n += e.hits;
  for (const auto &t : b.tags) n += t.hits;
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt::ReportHeader h;
  dt::ReportBody body;
  if (dt::decode_report(data, size, &h, &body) != dt::DecodeError::None) {
    if (!body.entries.empty() || !body.tags.empty()) abort();  // a rejected message yields nothing
    return 0;
  }
  for (const auto &e : body.entries)
    if (e.hits == 0 || e.hits > dt::kMaxHitsPerEntry || e.key.rule >= body.rules.size()) abort();
  for (const auto &t : body.tags)
    if (t.hits == 0 || t.hits > dt::kMaxHitsPerEntry || t.tag.empty()) abort();
  // Round trip (one part, large enough to hold everything the input held).
  auto msgs = dt::encode_report(h, h.seq, body, dt::kMaxAcceptedBytes);
  if (msgs.size() != 1) abort();
  dt::ReportHeader h2;
  dt::ReportBody b2;
  if (dt::decode_report(msgs[0].data(), msgs[0].size(), &h2, &b2) != dt::DecodeError::None) abort();
  if (h2.node_id != h.node_id || h2.seq != h.seq || h2.boot_id != h.boot_id || h2.epoch != h.epoch ||
      b2.entries.size() != body.entries.size() || b2.tags.size() != body.tags.size() || total(b2) != total(body))
    abort();
  return 0;
}
