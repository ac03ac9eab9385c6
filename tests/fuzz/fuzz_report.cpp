// fuzz_report.cpp - libFuzzer target for the peer report decoder.
//
// Whatever bytes arrive, decode_report() must not crash, read out of bounds (ASan),
// hit undefined behaviour (UBSan), or accept something inconsistent: an accepted
// message re-encodes to a message that decodes to the same header, entries, tags and
// adaptive factors (and the same recipient); a resend request re-encodes to the same
// requests; peek_sender names
// the sender of every accepted message. A signed one (kFlagSigned) decodes with its last
// 64 bytes set aside (the signature is checked before decoding, not here).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cluster_core/peer_protocol.h"

namespace {
uint64_t total(const dt::ReportBody &b) {
  uint64_t n = 0;
  for (const auto &e : b.entries) n += e.hits;
  for (const auto &t : b.tags) n += t.hits;
  return n;
}

bool valid_factor(const dt::RuleFactor &f) {
  if (f.factor_ppm == 0 || f.factor_ppm > dt::kFactorOne) return false;
  if (f.tag)
    return f.name.size() <= dt::kMaxTagLen && f.name.find('\n') == std::string::npos &&
           f.name.find('\0') == std::string::npos;
  return !f.name.empty() && f.name.size() <= dt::kMaxRuleNameLen && dt::valid_node_id(f.name);
}

bool same_factors(const std::vector<dt::RuleFactor> &a, const std::vector<dt::RuleFactor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++)
    if (a[i].tag != b[i].tag || a[i].name != b[i].name || a[i].factor_ppm != b[i].factor_ppm) return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dt::ReportHeader h;
  dt::ReportBody body;
  if (dt::decode_report(data, size, &h, &body) != dt::DecodeError::None) {
    // a rejected message yields nothing
    if (!body.entries.empty() || !body.tags.empty() || !body.factors.empty() || !body.resend.empty()) abort();
    return 0;
  }
  // The prefix a signature check reads names the same sender.
  std::string sender;
  uint8_t flags = 0;
  if (dt::peek_sender(data, size, &sender, &flags) != dt::DecodeError::None || sender != h.node_id) abort();
  if (!body.resend.empty()) {
    // A resend request: nothing else in it, bounded, seqs ascending from 1; round trip.
    if (h.stream != dt::Stream::Resend || !body.entries.empty() || !body.tags.empty() || !body.factors.empty() ||
        body.resend.size() > dt::kMaxResendPeers)
      abort();
    for (const auto &r : body.resend) {
      if (r.seqs.empty() || r.seqs.size() > dt::kMaxResendSeqs || r.seqs[0] == 0) abort();
      for (size_t i = 1; i < r.seqs.size(); i++)
        if (r.seqs[i] <= r.seqs[i - 1]) abort();
    }
    const std::string m = dt::encode_resend_request(h, body.resend);
    dt::ReportHeader h2;
    dt::ReportBody b2;
    if (dt::decode_report(m.data(), m.size(), &h2, &b2) != dt::DecodeError::None ||
        b2.resend.size() != body.resend.size() || h2.to != h.to || h2.seq != h.seq)
      abort();
    for (size_t i = 0; i < b2.resend.size(); i++)
      if (b2.resend[i].node_id != body.resend[i].node_id || b2.resend[i].boot_id != body.resend[i].boot_id ||
          b2.resend[i].seqs != body.resend[i].seqs)
        abort();
    return 0;
  }
  for (const auto &e : body.entries)
    if (e.hits == 0 || e.hits > dt::kMaxHitsPerEntry || e.key.rule >= body.rules.size()) abort();
  for (const auto &t : body.tags)
    if (t.hits == 0 || t.hits > dt::kMaxHitsPerEntry || t.tag.empty()) abort();
  if (body.factors.size() > dt::kMaxFactors) abort();
  for (const auto &f : body.factors)
    if (!valid_factor(f)) abort();
  // Round trip (one part, large enough to hold everything the input held).
  auto msgs = dt::encode_report(h, h.seq, body, dt::kMaxAcceptedBytes);
  if (msgs.size() != 1) abort();
  dt::ReportHeader h2;
  dt::ReportBody b2;
  if (dt::decode_report(msgs[0].data(), msgs[0].size(), &h2, &b2) != dt::DecodeError::None) abort();
  if (h2.node_id != h.node_id || h2.to != h.to || h2.seq != h.seq || h2.boot_id != h.boot_id || h2.epoch != h.epoch ||
      b2.entries.size() != body.entries.size() || b2.tags.size() != body.tags.size() || total(b2) != total(body) ||
      !same_factors(b2.factors, body.factors))
    abort();
  // The flag is set exactly when there are factors to carry.
  if (((msgs[0][5] & dt::kFlagFactors) != 0) != !body.factors.empty()) abort();
  return 0;
}
