// aggregate_protocol.cpp - encoder and strict decoder of a summing hub's messages.
#include "cluster_core/aggregate_protocol.h"

#include <cstring>

namespace dt {
namespace {

constexpr char kAggMagic[4] = {'D', 'T', 'A', 'G'};
constexpr uint8_t kAggVersion = 1;

void put_u64(std::string *out, uint64_t v) {
  for (int i = 0; i < 8; i++) out->push_back(static_cast<char>(v >> (8 * i)));
}
void put_varint(std::string *out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

struct Cursor {
  const uint8_t *p, *end;
  size_t left() const { return static_cast<size_t>(end - p); }
  bool u8(uint8_t *v) {
    if (p == end) return false;
    *v = *p++;
    return true;
  }
  bool u64(uint64_t *v) {
    if (left() < 8) return false;
    *v = 0;
    for (int i = 7; i >= 0; i--) *v = (*v << 8) | p[i];
    p += 8;
    return true;
  }
  bool varint(uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!u8(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool id(std::string *out) {
    uint8_t n;
    if (!u8(&n) || n == 0 || n > kMaxNodeIdLen || left() < n) return false;
    out->assign(reinterpret_cast<const char *>(p), n);
    p += n;
    return valid_node_id(*out);
  }
};

std::string prefix_bytes(const std::string &hub_id, const std::vector<IncludedSeqs> &included) {
  std::string out(kAggMagic, sizeof kAggMagic);
  out.push_back(static_cast<char>(kAggVersion));
  out.push_back(0);  // flags: sign_message sets kFlagSigned
  out.push_back(static_cast<char>(hub_id.size()));
  out += hub_id;
  put_varint(&out, included.size());
  for (const auto &n : included) {
    out.push_back(static_cast<char>(n.node_id.size()));
    out += n.node_id;
    put_u64(&out, n.boot_id);
    put_varint(&out, n.seqs.size());
    for (size_t i = 0; i < n.seqs.size(); i++) put_varint(&out, i ? n.seqs[i] - n.seqs[i - 1] : n.seqs[0]);
  }
  return out;
}

// Magic, version, flags and hub id.
DecodeError take_prefix(Cursor &c, std::string *hub_id, uint8_t *flags) {
  uint8_t version;
  if (c.left() < sizeof kAggMagic + 3) return DecodeError::TooShort;
  if (memcmp(c.p, kAggMagic, sizeof kAggMagic) != 0) return DecodeError::BadMagic;
  c.p += sizeof kAggMagic;
  if (!c.u8(&version) || version != kAggVersion) return DecodeError::WrongVersion;
  if (!c.u8(flags)) return DecodeError::TooShort;
  return c.id(hub_id) ? DecodeError::None : DecodeError::BadNodeId;
}

DecodeError take_included(Cursor &c, std::vector<IncludedSeqs> *out) {
  uint64_t nnodes;
  if (!c.varint(&nnodes)) return DecodeError::BadVarint;
  if (nnodes > kMaxAggregateNodes || nnodes > c.left()) return DecodeError::AbsurdCount;
  for (uint64_t i = 0; i < nnodes; i++) {
    IncludedSeqs n;
    uint64_t nseqs, v, seq = 0;
    if (!c.id(&n.node_id)) return DecodeError::BadNodeId;
    if (!c.u64(&n.boot_id) || !c.varint(&nseqs)) return DecodeError::TooShort;
    if (nseqs == 0 || nseqs > kMaxAggregateSeqs || nseqs > c.left()) return DecodeError::AbsurdCount;
    for (uint64_t k = 0; k < nseqs; k++) {
      if (!c.varint(&v)) return DecodeError::BadVarint;
      if (v == 0 || seq + v < seq) return DecodeError::BadResend;  // ascending, distinct, >= 1
      seq += v;
      n.seqs.push_back(seq);
    }
    out->push_back(std::move(n));
  }
  return DecodeError::None;
}

}  // namespace

bool is_aggregate_message(const void *data, size_t len) {
  return len >= sizeof kAggMagic && memcmp(data, kAggMagic, sizeof kAggMagic) == 0;
}

std::vector<std::string> encode_aggregate(const std::string &hub_id, const std::vector<IncludedSeqs> &included,
                                          const ReportHeader &hdr, uint64_t first_seq, const ReportBody &sums,
                                          size_t max_bytes) {
  const std::string prefix = prefix_bytes(hub_id, included);
  const size_t room = max_bytes > prefix.size() + 1024 ? max_bytes - prefix.size() - 10 : 1024;
  std::vector<std::string> out;
  for (auto &report : encode_report(hdr, first_seq, sums, room)) {
    std::string m = prefix;
    put_varint(&m, report.size());
    m += report;
    out.push_back(std::move(m));
  }
  return out;
}

DecodeError peek_aggregate_sender(const void *data, size_t len, std::string *hub_id, uint8_t *flags) {
  Cursor c{static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + len};
  return take_prefix(c, hub_id, flags);
}

DecodeError decode_aggregate(const void *data, size_t len, AggregateMessage *out) {
  *out = AggregateMessage{};
  if (len > kMaxAcceptedBytes) return DecodeError::TooLarge;
  Cursor c{static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + len};
  AggregateMessage m;
  uint8_t flags;
  if (DecodeError e = take_prefix(c, &m.hub_id, &flags); e != DecodeError::None) return e;
  if (flags & kFlagSigned) {
    if (c.left() < kSignatureBytes) return DecodeError::TooShort;
    c.end -= kSignatureBytes;
  }
  if (DecodeError e = take_included(c, &m.included); e != DecodeError::None) return e;
  uint64_t report_len;
  if (!c.varint(&report_len)) return DecodeError::BadVarint;
  if (report_len != c.left()) return report_len > c.left() ? DecodeError::TooShort : DecodeError::TrailingBytes;
  if (DecodeError e = decode_report(c.p, report_len, &m.header, &m.body); e != DecodeError::None) return e;
  if (m.header.node_id != m.hub_id || !m.body.resend.empty()) return DecodeError::BadNodeId;
  *out = std::move(m);
  return DecodeError::None;
}

}  // namespace dt
