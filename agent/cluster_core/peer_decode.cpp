// peer_decode.cpp - the strict decoder of peer messages (peer_protocol.h): every count,
// length and value bounded before it is used; anything else is a named DecodeError.
#include "cluster_core/peer_protocol.h"
#include "cluster_core/peer_wire.h"

namespace dt {
using namespace wire;

bool wire::valid_notice(const BanNotice &n) {
  const unsigned max = n.prefix.is_v6 ? 128 : 32;
  if (n.prefix.len == 0 || n.prefix.len > max || addr_is_v4(n.prefix.addr) == n.prefix.is_v6) return false;
  BanPrefix masked;
  std::string err;
  if (!parse_ban_prefix(ban_prefix_text(n.prefix), &masked, &err) || !(masked == n.prefix)) return false;
  if (n.remove) return true;
  return n.remaining_ms >= 1 && n.remaining_ms <= kMaxBanNs / 1'000'000 && valid_ban_text(n.reason, kMaxBanReason) &&
         valid_ban_text(n.origin, kMaxBanOrigin) && valid_ban_text(n.who, kMaxBanWho);
}

bool valid_verified(const VerifiedSource &v) {
  if (v.remaining_ms == 0 || v.remaining_ms > kMaxVerifiedMs) return false;
  if (v.key.rule == DT_VERIFIED_V6) return true;
  return v.key.rule == DT_VERIFIED_V4 && addr_is_v4(v.key.addr);
}

namespace {

// A name (a node id, a rule's name) after its length byte: 1 to `max` bytes, valid as a
// node id, else `bad`.
DecodeError take_name(Reader &r, size_t max, DecodeError bad, std::string *out) {
  uint8_t len;
  if (!r.u8(&len)) return DecodeError::TooShort;
  if (len == 0 || len > max) return bad;
  std::string name(len, '\0');
  if (!r.take(name.data(), len)) return DecodeError::TooShort;
  if (!valid_node_id(name)) return bad;
  *out = std::move(name);
  return DecodeError::None;
}

// The length of a list that may not be empty: 1 to `max`, else `bad`.
DecodeError take_count(Reader &r, uint64_t max, DecodeError bad, uint64_t *n) {
  if (DecodeError e = r.varint(n); e != DecodeError::None) return e;
  return *n == 0 || *n > max ? bad : DecodeError::None;
}

// A list that may not be empty, appended to *out: its length (take_count), AbsurdCount if
// that many items of at least `min_bytes` each (0: no such bound) cannot fit what is left,
// then each item by `take`.
template <class T, class Take>
DecodeError take_list(Reader &r, uint64_t max, DecodeError bad, size_t min_bytes, std::vector<T> *out, Take take) {
  uint64_t n;
  if (DecodeError e = take_count(r, max, bad, &n); e != DecodeError::None) return e;
  if (min_bytes && n > r.left() / min_bytes) return DecodeError::AbsurdCount;
  out->reserve(out->size() + n);
  for (uint64_t i = 0; i < n; i++) {
    T item;
    if (DecodeError e = take(r, &item); e != DecodeError::None) return e;
    out->push_back(std::move(item));
  }
  return DecodeError::None;
}

// Magic, version, flags and node id.
DecodeError take_sender(Reader &r, std::string *node_id, uint8_t *flags) {
  char magic[4];
  uint8_t version;
  if (!r.take(magic, 4)) return DecodeError::TooShort;
  if (memcmp(magic, kMagic, 4) != 0) return DecodeError::BadMagic;
  if (!r.u8(&version)) return DecodeError::TooShort;
  if (version != kProtocolVersion) return DecodeError::WrongVersion;
  if (!r.u8(flags)) return DecodeError::TooShort;
  return take_name(r, kMaxNodeIdLen, DecodeError::BadNodeId, node_id);
}

Stream stream_of(uint8_t flags) {
  if (flags & kFlagBans) return Stream::Bans;
  if (flags & kFlagResend) return Stream::Resend;
  if (flags & kFlagVerified) return Stream::Verified;
  return Stream::Reports;
}

// The recipient: empty (every member) or a node id.
DecodeError take_recipient(Reader &r, std::string *to) {
  uint8_t len;
  if (!r.u8(&len)) return DecodeError::TooShort;
  if (len > kMaxNodeIdLen) return DecodeError::BadRecipient;
  to->assign(len, '\0');
  if (!r.take(to->data(), len)) return DecodeError::TooShort;
  if (len && !valid_node_id(*to)) return DecodeError::BadRecipient;
  return DecodeError::None;
}

// The sender, the recipient, then boot id, seq, epoch, send time and part numbers.
DecodeError take_header(Reader &r, ReportHeader *h, uint8_t *flags) {
  if (DecodeError e = take_sender(r, &h->node_id, flags); e != DecodeError::None) return e;
  if (DecodeError e = take_recipient(r, &h->to); e != DecodeError::None) return e;
  h->stream = stream_of(*flags);
  if (!r.u64(&h->boot_id) || !r.u64(&h->seq) || !r.u64(&h->epoch) || !r.u64(&h->sent_unix_ms) || !r.u16(&h->part) ||
      !r.u16(&h->parts))
    return DecodeError::TooShort;
  if (h->parts == 0 || h->parts > kMaxParts || h->part >= h->parts) return DecodeError::BadParts;
  return DecodeError::None;
}

// One group's entries of one family (4 or 6): count, then address and hits of each.
DecodeError take_entries(Reader &r, int family, uint32_t rule, ReportBody *out) {
  const size_t addr_len = family == 4 ? 4 : 16;
  uint64_t n;
  if (DecodeError e = r.varint(&n); e != DecodeError::None) return e;
  if (n > r.left() / (addr_len + 1)) return DecodeError::AbsurdCount;
  out->entries.reserve(out->entries.size() + n);
  for (uint64_t i = 0; i < n; i++) {
    ReportEntry e{};
    e.key.rule = rule;
    if (family == 4) {
      memcpy(e.key.addr, kV4MappedPrefix, sizeof kV4MappedPrefix);
      if (!r.take(&e.key.addr[12], 4)) return DecodeError::TooShort;
    } else if (!r.take(e.key.addr, 16)) {
      return DecodeError::TooShort;
    }
    if (DecodeError err = r.varint(&e.hits); err != DecodeError::None) return err;
    if (e.hits == 0 || e.hits > kMaxHitsPerEntry) return DecodeError::AbsurdHits;
    out->entries.push_back(e);
  }
  return DecodeError::None;
}

DecodeError take_groups(Reader &r, ReportBody *out) {
  uint64_t ngroups;
  if (DecodeError e = r.varint(&ngroups); e != DecodeError::None) return e;
  if (ngroups > DT_MAX_RULES || ngroups > r.left() / 4) return DecodeError::AbsurdCount;
  for (uint64_t g = 0; g < ngroups; g++) {
    std::string name;
    if (DecodeError e = take_name(r, kMaxRuleNameLen, DecodeError::BadRuleName, &name); e != DecodeError::None)
      return e;
    const uint32_t rule = static_cast<uint32_t>(out->rules.size());
    out->rules.push_back(std::move(name));
    for (int family = 4; family <= 6; family += 2)
      if (DecodeError e = take_entries(r, family, rule, out); e != DecodeError::None) return e;
  }
  return DecodeError::None;
}

DecodeError take_tags(Reader &r, ReportBody *out) {
  uint64_t ntags;
  if (DecodeError e = r.varint(&ntags); e != DecodeError::None) return e;
  if (ntags > r.left() / 3) return DecodeError::AbsurdCount;
  for (uint64_t i = 0; i < ntags; i++) {
    uint64_t tlen;
    if (DecodeError e = r.varint(&tlen); e != DecodeError::None) return e;
    if (tlen == 0 || tlen > kMaxTagLen) return DecodeError::BadTag;
    TagHit t;
    t.tag.resize(tlen);
    if (!r.take(t.tag.data(), tlen)) return DecodeError::TooShort;
    if (t.tag.find('\n') != std::string::npos || t.tag.find('\0') != std::string::npos) return DecodeError::BadTag;
    if (DecodeError e = r.varint(&t.hits); e != DecodeError::None) return e;
    if (t.hits == 0 || t.hits > kMaxHitsPerEntry) return DecodeError::AbsurdHits;
    out->tags.push_back(std::move(t));
  }
  return DecodeError::None;
}

DecodeError take_factors(Reader &r, ReportBody *out) {
  uint64_t nfactors;
  if (DecodeError e = r.varint(&nfactors); e != DecodeError::None) return e;
  if (nfactors > kMaxFactors || nfactors > r.left() / kMinFactorBytes) return DecodeError::AbsurdCount;
  out->factors.reserve(nfactors);
  for (uint64_t i = 0; i < nfactors; i++) {
    uint8_t kind;
    uint64_t name_len;
    if (!r.u8(&kind)) return DecodeError::TooShort;
    if (kind > 1) return DecodeError::BadFactor;
    if (DecodeError e = r.varint(&name_len); e != DecodeError::None) return e;
    RuleFactor f;
    f.tag = kind == 1;
    // Bound the length before allocating; the content is checked below.
    if (name_len > (f.tag ? kMaxTagLen : kMaxRuleNameLen)) return DecodeError::BadFactor;
    f.name.resize(name_len);
    if (!r.take(f.name.data(), name_len) || !r.u32(&f.factor_ppm)) return DecodeError::TooShort;
    if (!valid_factor(f)) return DecodeError::BadFactor;
    out->factors.push_back(std::move(f));
  }
  return DecodeError::None;
}

DecodeError take_resend_peer(Reader &r, ResendRequest *req) {
  if (DecodeError e = take_name(r, kMaxNodeIdLen, DecodeError::BadNodeId, &req->node_id); e != DecodeError::None)
    return e;
  uint64_t nseqs;
  if (!r.u64(&req->boot_id)) return DecodeError::TooShort;
  if (DecodeError e = take_count(r, kMaxResendSeqs, DecodeError::BadResend, &nseqs); e != DecodeError::None) return e;
  uint64_t seq = 0;
  for (uint64_t i = 0; i < nseqs; i++) {
    uint64_t gap;
    if (DecodeError e = r.varint(&gap); e != DecodeError::None) return e;
    if (gap == 0 || gap > UINT64_MAX - seq) return DecodeError::BadResend;
    seq += gap;
    req->seqs.push_back(seq);
  }
  return DecodeError::None;
}

DecodeError take_short_text(Reader &r, size_t max, std::string *out) {
  uint8_t len;
  if (!r.u8(&len)) return DecodeError::TooShort;
  if (len > max) return DecodeError::BadBan;
  out->resize(len);
  if (!r.take(out->data(), len)) return DecodeError::TooShort;
  return DecodeError::None;
}

DecodeError take_ban(Reader &r, uint64_t sent_unix_ms, BanNotice *n) {
  uint8_t op, family, len;
  if (!r.u8(&op) || !r.u8(&family) || !r.u8(&len)) return DecodeError::TooShort;
  if (op > 1 || (family != 4 && family != 6)) return DecodeError::BadBan;
  n->remove = op == 0;
  n->prefix.is_v6 = family == 6;
  n->prefix.len = len;
  if (family == 4) memcpy(n->prefix.addr, kV4MappedPrefix, sizeof kV4MappedPrefix);
  if (!r.take(n->prefix.addr + (family == 4 ? 12 : 0), family == 4 ? 4 : 16) || !r.u64(&n->unix_ms))
    return DecodeError::TooShort;
  if (!n->remove) {
    uint64_t expires_unix_ms;
    if (!r.u64(&expires_unix_ms)) return DecodeError::TooShort;
    // Expired at its sender when sent, or absurd: not a ban its sender would send.
    if (expires_unix_ms <= sent_unix_ms) return DecodeError::BadBan;
    n->remaining_ms = expires_unix_ms - sent_unix_ms;
    for (auto [s, max] : {std::pair{&n->reason, kMaxBanReason}, {&n->origin, kMaxBanOrigin}, {&n->who, kMaxBanWho}})
      if (DecodeError e = take_short_text(r, max, s); e != DecodeError::None) return e;
  }
  return valid_notice(*n) ? DecodeError::None : DecodeError::BadBan;
}

DecodeError take_verified(Reader &r, VerifiedSource *v) {
  uint8_t family;
  if (!r.u8(&family)) return DecodeError::TooShort;
  if (family != 4 && family != 6) return DecodeError::BadVerified;
  v->key.rule = family == 6 ? DT_VERIFIED_V6 : DT_VERIFIED_V4;
  if (family == 4) memcpy(v->key.addr, kV4MappedPrefix, sizeof kV4MappedPrefix);
  if (!r.take(v->key.addr + (family == 4 ? 12 : 0), family == 4 ? 4 : 16)) return DecodeError::TooShort;
  if (DecodeError e = r.varint(&v->remaining_ms); e != DecodeError::None) return e;
  return valid_verified(*v) ? DecodeError::None : DecodeError::BadVerified;
}

// Bans, resend requests, verified sources and a relay are each a message of its own: no
// hits, no tags, none of the `other` sections.
bool alone(const ReportBody &b, uint8_t flags, uint8_t other) {
  return b.rules.empty() && b.tags.empty() && !(flags & other);
}

// One host's hits in an owner's relay: its node id, then its groups.
DecodeError take_relayed(Reader &r, RelayedReport *h) {
  if (DecodeError e = take_name(r, kMaxNodeIdLen, DecodeError::BadRelay, &h->node_id); e != DecodeError::None) return e;
  ReportBody groups;
  if (DecodeError e = take_groups(r, &groups); e != DecodeError::None) return e;
  h->rules = std::move(groups.rules);
  h->entries = std::move(groups.entries);
  return DecodeError::None;
}

}  // namespace

bool unwrap_directed(const void *data, size_t len, std::string *to, size_t *inner_offset) {
  const auto *p = static_cast<const uint8_t *>(data);
  if (len < 4 || memcmp(p, kDirectedMagic, 3) != 0) return false;
  const size_t id_len = p[3];
  if (id_len == 0 || id_len > kMaxNodeIdLen || len < 4 + id_len) return false;
  to->assign(reinterpret_cast<const char *>(p + 4), id_len);
  *inner_offset = 4 + id_len;
  return true;
}

const char *decode_error_name(DecodeError e) {
  switch (e) {
    case DecodeError::None: return "ok";
    case DecodeError::TooShort: return "truncated";
    case DecodeError::TooLarge: return "oversized";
    case DecodeError::BadMagic: return "bad magic";
    case DecodeError::WrongVersion: return "wrong version";
    case DecodeError::BadNodeId: return "bad node id";
    case DecodeError::BadParts: return "bad part numbers";
    case DecodeError::BadVarint: return "bad varint";
    case DecodeError::AbsurdCount: return "absurd entry count";
    case DecodeError::AbsurdHits: return "absurd hit count";
    case DecodeError::BadRuleName: return "bad rule name";
    case DecodeError::BadTag: return "bad tag";
    case DecodeError::TrailingBytes: return "trailing bytes";
    case DecodeError::BadFactor: return "bad factor";
    case DecodeError::BadResend: return "bad resend request";
    case DecodeError::BadBan: return "bad ban";
    case DecodeError::BadRelay: return "bad relay";
    case DecodeError::BadRecipient: return "bad recipient";
    case DecodeError::BadVerified: return "bad verified sources";
  }
  return "?";
}

const char *stream_name(Stream s) {
  switch (s) {
    case Stream::Reports: return "reports";
    case Stream::Bans: return "bans";
    case Stream::Resend: return "resend requests";
    case Stream::Verified: return "verified sources";
  }
  return "?";
}

uint8_t peek_version(const void *data, size_t len) {
  const auto *p = static_cast<const uint8_t *>(data);
  return len > 4 && memcmp(p, kMagic, 4) == 0 ? p[4] : 0;
}

DecodeError peek_sender(const void *data, size_t len, std::string *node_id, uint8_t *flags) {
  Reader r{static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + len};
  return take_sender(r, node_id, flags);
}

DecodeError decode_report(const void *data, size_t len, ReportHeader *hdr, ReportBody *body) {
  *body = ReportBody{};
  if (len > kMaxAcceptedBytes) return DecodeError::TooLarge;
  Reader r{static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + len};
  ReportHeader h;
  uint8_t flags;
  if (DecodeError e = take_header(r, &h, &flags); e != DecodeError::None) return e;
  if (flags & kFlagSigned) {  // checked by the receiver before: the body ends before it
    if (r.left() < kSignatureBytes) return DecodeError::TooShort;
    r.end -= kSignatureBytes;
  }
  ReportBody out;
  if (DecodeError e = take_groups(r, &out); e != DecodeError::None) return e;
  if (DecodeError e = take_tags(r, &out); e != DecodeError::None) return e;
  auto ban = [&h](Reader &in, BanNotice *n) { return take_ban(in, h.sent_unix_ms, n); };
  DecodeError e = DecodeError::None;
  if (flags & kFlagBans) {  // at least 15 bytes a ban (the lift of an IPv4 prefix)
    if (!alone(out, flags, kFlagFactors | kFlagResend)) return DecodeError::BadBan;
    e = take_list(r, kMaxBansPerMessage, DecodeError::BadBan, 15, &out.bans, ban);
  } else if (flags & kFlagResend) {
    if (!alone(out, flags, kFlagFactors)) return DecodeError::BadResend;
    e = take_list(r, kMaxResendPeers, DecodeError::BadResend, 0, &out.resend, take_resend_peer);
  } else if (flags & kFlagVerified) {  // at least 6 bytes a source (an IPv4 one)
    if (!alone(out, flags, kFlagFactors | kFlagResend | kFlagRelay)) return DecodeError::BadVerified;
    e = take_list(r, kMaxVerifiedPerMessage, DecodeError::BadVerified, 6, &out.verified, take_verified);
  } else if (flags & kFlagRelay) {
    if (!alone(out, flags, kFlagFactors)) return DecodeError::BadRelay;
    e = take_list(r, kMaxRelayHosts, DecodeError::BadRelay, 0, &out.relayed, take_relayed);
  } else if (flags & kFlagFactors) {
    e = take_factors(r, &out);
  }
  if (e != DecodeError::None) return e;
  if (r.left() != 0) return DecodeError::TrailingBytes;
  *hdr = std::move(h);
  *body = std::move(out);
  return DecodeError::None;
}

}  // namespace dt
