// peer_protocol.cpp - encoder and strict decoder of peer reports.
#include "cluster_core/peer_protocol.h"

#include <algorithm>
#include <cstring>

#include "common/address.h"

namespace dt {
namespace {

constexpr char kMagic[4] = {'D', 'T', 'R', 'P'};
// magic, version, flags, id length, recipient length, 4 x u64, 2 x u16
constexpr size_t kFixedBytes = 4 + 1 + 1 + 1 + 1 + 4 * 8 + 2 * 2;

bool is_v4(const dt_key &k) { return addr_is_v4(k.addr); }

void put_u64(std::string *out, uint64_t v) {
  for (int i = 0; i < 8; i++) out->push_back(static_cast<char>(v >> (8 * i)));
}
void put_u16(std::string *out, uint16_t v) {
  out->push_back(static_cast<char>(v));
  out->push_back(static_cast<char>(v >> 8));
}
void put_u32(std::string *out, uint32_t v) {
  for (int i = 0; i < 4; i++) out->push_back(static_cast<char>(v >> (8 * i)));
}
void put_varint(std::string *out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
size_t varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

// Bounds-checked reader over the message.
struct Reader {
  const uint8_t *p, *end;
  bool take(void *dst, size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    memcpy(dst, p, n);
    p += n;
    return true;
  }
  bool u8(uint8_t *v) { return take(v, 1); }
  bool u16(uint16_t *v) {
    uint8_t b[2];
    if (!take(b, 2)) return false;
    *v = static_cast<uint16_t>(b[0] | (b[1] << 8));
    return true;
  }
  bool u32(uint32_t *v) {
    uint8_t b[4];
    if (!take(b, 4)) return false;
    *v = static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 | static_cast<uint32_t>(b[2]) << 16 |
         static_cast<uint32_t>(b[3]) << 24;
    return true;
  }
  bool u64(uint64_t *v) {
    uint8_t b[8];
    if (!take(b, 8)) return false;
    *v = 0;
    for (int i = 7; i >= 0; i--) *v = (*v << 8) | b[i];
    return true;
  }
  // Returns None, TooShort or BadVarint.
  DecodeError varint(uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!u8(&b)) return DecodeError::TooShort;
      if (shift == 63 && (b & 0x7e)) return DecodeError::BadVarint;  // > 64 bits
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return DecodeError::None;
    }
    return DecodeError::BadVarint;
  }
  size_t left() const { return static_cast<size_t>(end - p); }
};

bool valid_rule_name(const std::string &name) {
  return !name.empty() && name.size() <= kMaxRuleNameLen && valid_node_id(name);
}

// A tag or a tag rule prefix: no newline (the query protocol's separator) or NUL.
bool valid_tag_bytes(const std::string &t) {
  return t.size() <= kMaxTagLen && t.find('\n') == std::string::npos && t.find('\0') == std::string::npos;
}

bool valid_factor(const RuleFactor &f) {
  if (f.factor_ppm == 0 || f.factor_ppm > kFactorOne) return false;
  return f.tag ? valid_tag_bytes(f.name) : valid_rule_name(f.name);
}

// kind, name length, name, u32 factor
size_t factor_bytes(const RuleFactor &f) { return 1 + varint_len(f.name.size()) + f.name.size() + 4; }
constexpr size_t kMinFactorBytes = 1 + 1 + 0 + 4;

std::string header_bytes(const ReportHeader &h, uint64_t seq, uint16_t part, uint16_t parts, uint8_t flags) {
  std::string out(kMagic, sizeof kMagic);
  out.push_back(static_cast<char>(kProtocolVersion));
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>(h.node_id.size()));
  out += h.node_id;
  out.push_back(static_cast<char>(h.to.size()));
  out += h.to;
  put_u64(&out, h.boot_id);
  put_u64(&out, seq);
  put_u64(&out, h.epoch);
  put_u64(&out, h.sent_unix_ms);
  put_u16(&out, part);
  put_u16(&out, parts);
  return out;
}


uint64_t clamp_hits(uint64_t h) { return h > kMaxHitsPerEntry ? kMaxHitsPerEntry : h; }

// What of a body goes on the wire: valid entries grouped by rule, valid tags, and at most
// kMaxFactors valid factors with the bytes their section takes (0 when there are none).
struct ReportItems {
  std::vector<std::vector<const ReportEntry *>> by_rule;
  std::vector<const TagHit *> tags;
  std::vector<const RuleFactor *> factors;
  size_t factors_size = 0;
};

ReportItems select_items(const ReportBody &body) {
  ReportItems items;
  items.by_rule.resize(body.rules.size());
  for (const auto &e : body.entries)
    if (e.hits && e.key.rule < body.rules.size() && valid_rule_name(body.rules[e.key.rule]))
      items.by_rule[e.key.rule].push_back(&e);
  for (const auto &t : body.tags)
    if (t.hits && !t.tag.empty() && valid_tag_bytes(t.tag)) items.tags.push_back(&t);
  for (const auto &f : body.factors)
    if (items.factors.size() < kMaxFactors && valid_factor(f)) {
      items.factors.push_back(&f);
      items.factors_size += factor_bytes(f);
    }
  if (!items.factors.empty()) items.factors_size += varint_len(items.factors.size());
  return items;
}

// A rule (its index in the body) and some of its entries.
using Group = std::pair<uint32_t, std::vector<const ReportEntry *>>;

// One message's share of the items: groups and tags.
struct Message {
  std::vector<Group> groups;
  std::vector<const TagHit *> tags;
};

// Items in the order they are written: entries grouped by rule, then tags. A message holds
// a run of them within max_bytes; a group's header is repeated in every message that carries
// some of its entries. The factors section is small and goes whole into message 0: a receiver
// applies it from whichever part carries it.
std::vector<Message> plan_messages(const ReportHeader &hdr, const ReportBody &body, const ReportItems &items,
                                   size_t max_bytes) {
  const size_t base = kFixedBytes + hdr.node_id.size() + hdr.to.size() + 2 * 3;
  std::vector<Message> msgs(1);
  size_t size = base + items.factors_size;  // message 0 carries the factors
  // Starts a new message if `need` more bytes would not fit; true if it did. A
  // message with nothing in it yet takes the item anyway (it cannot fit anywhere);
  // message 0 holding only factors is not empty.
  auto split_for = [&](size_t need) {
    const Message &m = msgs.back();
    const bool empty = m.groups.empty() && m.tags.empty() && !(msgs.size() == 1 && items.factors_size);
    if (size + need <= max_bytes || empty) return false;
    msgs.emplace_back();
    size = base;
    return true;
  };
  for (uint32_t r = 0; r < items.by_rule.size(); r++) {
    const size_t group_hdr = 1 + body.rules[r].size() + 2 * 3;
    bool opened = false;
    for (const auto *e : items.by_rule[r]) {
      const size_t n = (is_v4(e->key) ? 4 : 16) + varint_len(clamp_hits(e->hits));
      // A group's header is repeated in every message that carries some of it.
      if (split_for(n + group_hdr) || !opened) {
        size += group_hdr;
        msgs.back().groups.push_back({r, {}});
        opened = true;
      }
      size += n;
      msgs.back().groups.back().second.push_back(e);
    }
  }
  for (const auto *t : items.tags) {
    const size_t n = varint_len(t->tag.size()) + t->tag.size() + varint_len(clamp_hits(t->hits));
    split_for(n);
    size += n;
    msgs.back().tags.push_back(t);
  }
  return msgs;
}

// Groups section: count, then per group the rule name and its IPv4 then IPv6 entries.
void put_groups(std::string *msg, const ReportBody &body, const std::vector<Group> &groups) {
  put_varint(msg, groups.size());
  for (const auto &[rule, entries] : groups) {
    msg->push_back(static_cast<char>(body.rules[rule].size()));
    *msg += body.rules[rule];
    for (int family = 4; family <= 6; family += 2) {
      uint64_t n = 0;
      for (const auto *e : entries) n += (is_v4(e->key) == (family == 4));
      put_varint(msg, n);
      for (const auto *e : entries) {
        if (is_v4(e->key) != (family == 4)) continue;
        if (family == 4) msg->append(reinterpret_cast<const char *>(&e->key.addr[12]), 4);
        else msg->append(reinterpret_cast<const char *>(e->key.addr), 16);
        put_varint(msg, clamp_hits(e->hits));
      }
    }
  }
}

// Tags section: count, then each tag's length, bytes and hits.
void put_tags(std::string *msg, const std::vector<const TagHit *> &tags) {
  put_varint(msg, tags.size());
  for (const auto *t : tags) {
    put_varint(msg, t->tag.size());
    *msg += t->tag;
    put_varint(msg, clamp_hits(t->hits));
  }
}

// Factors section (only with kFlagFactors): count, then kind, name and factor of each.
void put_factors(std::string *msg, const std::vector<const RuleFactor *> &factors) {
  put_varint(msg, factors.size());
  for (const auto *f : factors) {
    msg->push_back(static_cast<char>(f->tag ? 1 : 0));
    put_varint(msg, f->name.size());
    *msg += f->name;
    put_u32(msg, f->factor_ppm);
  }
}

// Magic, version, flags and node id.
DecodeError take_sender(Reader &r, std::string *node_id, uint8_t *flags) {
  char magic[4];
  uint8_t version, id_len;
  if (!r.take(magic, 4)) return DecodeError::TooShort;
  if (memcmp(magic, kMagic, 4) != 0) return DecodeError::BadMagic;
  if (!r.u8(&version)) return DecodeError::TooShort;
  if (version != kProtocolVersion) return DecodeError::WrongVersion;
  if (!r.u8(flags) || !r.u8(&id_len)) return DecodeError::TooShort;
  if (id_len == 0 || id_len > kMaxNodeIdLen) return DecodeError::BadNodeId;
  std::string id(id_len, '\0');
  if (!r.take(id.data(), id_len)) return DecodeError::TooShort;
  if (!valid_node_id(id)) return DecodeError::BadNodeId;
  *node_id = std::move(id);
  return DecodeError::None;
}

Stream stream_of(uint8_t flags) {
  if (flags & kFlagBans) return Stream::Bans;
  if (flags & kFlagResend) return Stream::Resend;
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
  if (!r.u64(&h->boot_id) || !r.u64(&h->seq) || !r.u64(&h->epoch) || !r.u64(&h->sent_unix_ms) ||
      !r.u16(&h->part) || !r.u16(&h->parts))
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
    uint8_t name_len;
    if (!r.u8(&name_len)) return DecodeError::TooShort;
    if (name_len == 0 || name_len > kMaxRuleNameLen) return DecodeError::BadRuleName;
    std::string name(name_len, '\0');
    if (!r.take(name.data(), name_len)) return DecodeError::TooShort;
    if (!valid_node_id(name)) return DecodeError::BadRuleName;
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

// Resend requests section (only with kFlagResend): peers, each with its boot and seqs.
void put_resend(std::string *msg, const std::vector<ResendRequest> &reqs) {
  put_varint(msg, reqs.size());
  for (const auto &r : reqs) {
    msg->push_back(static_cast<char>(r.node_id.size()));
    *msg += r.node_id;
    put_u64(msg, r.boot_id);
    put_varint(msg, r.seqs.size());
    uint64_t prev = 0;
    for (uint64_t seq : r.seqs) {
      put_varint(msg, seq - prev);
      prev = seq;
    }
  }
}

DecodeError take_resend_peer(Reader &r, ResendRequest *req) {
  uint8_t id_len;
  if (!r.u8(&id_len)) return DecodeError::TooShort;
  if (id_len == 0 || id_len > kMaxNodeIdLen) return DecodeError::BadNodeId;
  req->node_id.resize(id_len);
  if (!r.take(req->node_id.data(), id_len)) return DecodeError::TooShort;
  if (!valid_node_id(req->node_id)) return DecodeError::BadNodeId;
  uint64_t nseqs;
  if (!r.u64(&req->boot_id)) return DecodeError::TooShort;
  if (DecodeError e = r.varint(&nseqs); e != DecodeError::None) return e;
  if (nseqs == 0 || nseqs > kMaxResendSeqs) return DecodeError::BadResend;
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

DecodeError take_resend(Reader &r, ReportBody *out) {
  uint64_t npeers;
  if (DecodeError e = r.varint(&npeers); e != DecodeError::None) return e;
  if (npeers == 0 || npeers > kMaxResendPeers) return DecodeError::BadResend;
  for (uint64_t i = 0; i < npeers; i++) {
    ResendRequest req;
    if (DecodeError e = take_resend_peer(r, &req); e != DecodeError::None) return e;
    out->resend.push_back(std::move(req));
  }
  return DecodeError::None;
}

// --- the bans section (kFlagBans) ---

bool valid_notice(const BanNotice &n) {
  const unsigned max = n.prefix.is_v6 ? 128 : 32;
  if (n.prefix.len == 0 || n.prefix.len > max || addr_is_v4(n.prefix.addr) == n.prefix.is_v6) return false;
  BanPrefix masked;
  std::string err;
  if (!parse_ban_prefix(ban_prefix_text(n.prefix), &masked, &err) || !(masked == n.prefix)) return false;
  if (n.remove) return true;
  return n.remaining_ms >= 1 && n.remaining_ms <= kMaxBanNs / 1'000'000 && valid_ban_text(n.reason, kMaxBanReason) &&
         valid_ban_text(n.origin, kMaxBanOrigin) && valid_ban_text(n.who, kMaxBanWho);
}

void put_short_text(std::string *msg, const std::string &s) {
  msg->push_back(static_cast<char>(s.size()));
  *msg += s;
}

// A set ban's expiry goes on the wire by the sender's clock: sent_unix_ms + remaining_ms.
void put_ban(std::string *msg, const BanNotice &n, uint64_t sent_unix_ms) {
  msg->push_back(static_cast<char>(n.remove ? 0 : 1));
  msg->push_back(static_cast<char>(n.prefix.is_v6 ? 6 : 4));
  msg->push_back(static_cast<char>(n.prefix.len));
  msg->append(reinterpret_cast<const char *>(n.prefix.addr) + (n.prefix.is_v6 ? 0 : 12), n.prefix.is_v6 ? 16 : 4);
  put_u64(msg, n.unix_ms);
  if (n.remove) return;
  put_u64(msg, sent_unix_ms + n.remaining_ms);
  put_short_text(msg, n.reason);
  put_short_text(msg, n.origin);
  put_short_text(msg, n.who);
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

DecodeError take_bans(Reader &r, uint64_t sent_unix_ms, ReportBody *out) {
  uint64_t nbans;
  if (DecodeError e = r.varint(&nbans); e != DecodeError::None) return e;
  if (nbans == 0 || nbans > kMaxBansPerMessage) return DecodeError::BadBan;
  if (nbans > r.left() / 15) return DecodeError::AbsurdCount;  // a lift of an IPv4 prefix: 15 bytes
  for (uint64_t i = 0; i < nbans; i++) {
    BanNotice n;
    if (DecodeError e = take_ban(r, sent_unix_ms, &n); e != DecodeError::None) return e;
    out->bans.push_back(std::move(n));
  }
  return DecodeError::None;
}

// Relay section (only with kFlagRelay): hosts, each with its groups.
void put_relay(std::string *msg, const std::vector<const RelayedReport *> &hosts) {
  put_varint(msg, hosts.size());
  for (const RelayedReport *h : hosts) {
    msg->push_back(static_cast<char>(h->node_id.size()));
    *msg += h->node_id;
    ReportBody body;
    body.rules = h->rules;
    body.entries = h->entries;
    const ReportItems items = select_items(body);  // points into body: keep it alive
    std::vector<Group> groups;
    for (uint32_t r = 0; r < items.by_rule.size(); r++)
      if (!items.by_rule[r].empty()) groups.push_back({r, items.by_rule[r]});
    put_groups(msg, body, groups);
  }
}

DecodeError take_relay(Reader &r, ReportBody *out) {
  uint64_t nhosts;
  if (DecodeError e = r.varint(&nhosts); e != DecodeError::None) return e;
  if (nhosts == 0 || nhosts > kMaxRelayHosts) return DecodeError::BadRelay;
  for (uint64_t i = 0; i < nhosts; i++) {
    uint8_t id_len;
    if (!r.u8(&id_len)) return DecodeError::TooShort;
    if (id_len == 0 || id_len > kMaxNodeIdLen) return DecodeError::BadRelay;
    RelayedReport h;
    h.node_id.resize(id_len);
    if (!r.take(h.node_id.data(), id_len)) return DecodeError::TooShort;
    if (!valid_node_id(h.node_id)) return DecodeError::BadRelay;
    ReportBody groups;
    if (DecodeError e = take_groups(r, &groups); e != DecodeError::None) return e;
    h.rules = std::move(groups.rules);
    h.entries = std::move(groups.entries);
    out->relayed.push_back(std::move(h));
  }
  return DecodeError::None;
}

}  // namespace

std::vector<std::string> encode_relay(const ReportHeader &hdr, uint64_t first_seq,
                                      const std::vector<RelayedReport> &relayed) {
  // Split into messages of at most kMaxRelayEntries entries and kMaxRelayHosts hosts; a
  // host with more entries than fit is split into several blocks.
  std::vector<std::vector<RelayedReport>> plan(1);
  size_t entries = 0;
  for (const RelayedReport &h : relayed) {
    if (h.node_id.empty() || h.node_id.size() > kMaxNodeIdLen || !valid_node_id(h.node_id)) continue;
    bool new_block = true;
    for (const ReportEntry &e : h.entries) {
      if (entries == kMaxRelayEntries) plan.emplace_back(), entries = 0, new_block = true;
      if (new_block) {
        if (plan.back().size() == kMaxRelayHosts) plan.emplace_back(), entries = 0;
        plan.back().push_back(RelayedReport{h.node_id, h.rules, {}});
        new_block = false;
      }
      plan.back().back().entries.push_back(e);
      entries++;
    }
  }
  std::vector<std::string> out;
  for (const auto &hosts : plan) {
    std::vector<const RelayedReport *> valid;
    for (const auto &h : hosts) {
      const ReportBody body{h.rules, h.entries, {}, {}, {}, {}, {}};
      const ReportItems items = select_items(body);
      if (std::any_of(items.by_rule.begin(), items.by_rule.end(), [](const auto &g) { return !g.empty(); }))
        valid.push_back(&h);
    }
    if (valid.empty()) continue;
    std::string msg = header_bytes(hdr, first_seq + out.size(), 0, 1, kFlagRelay);
    put_varint(&msg, 0);  // no rule groups of the sender's own
    put_varint(&msg, 0);  // no tags
    put_relay(&msg, valid);
    out.push_back(std::move(msg));
  }
  return out;
}

std::string wrap_directed(const std::string &to, const std::string &msg) {
  std::string out(kDirectedMagic, 3);
  out.push_back(static_cast<char>(to.size()));
  out += to;
  out += msg;
  return out;
}

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
  }
  return "?";
}

std::vector<std::string> encode_report(const ReportHeader &hdr, uint64_t first_seq, const ReportBody &body,
                                       size_t max_bytes) {
  const ReportItems items = select_items(body);
  const std::vector<Message> msgs = plan_messages(hdr, body, items, max_bytes);
  std::vector<std::string> out;
  const uint16_t parts = static_cast<uint16_t>(msgs.size() > kMaxParts ? kMaxParts : msgs.size());
  for (uint16_t part = 0; part < parts; part++) {
    const Message &m = msgs[part];
    const bool with_factors = part == 0 && !items.factors.empty();
    std::string msg = header_bytes(hdr, first_seq + part, part, parts, with_factors ? kFlagFactors : 0);
    put_groups(&msg, body, m.groups);
    put_tags(&msg, m.tags);
    if (with_factors) put_factors(&msg, items.factors);
    out.push_back(std::move(msg));
  }
  return out;
}

std::string encode_resend_request(const ReportHeader &hdr, const std::vector<ResendRequest> &reqs) {
  std::vector<ResendRequest> valid;
  for (const auto &r : reqs) {
    if (valid.size() >= kMaxResendPeers) break;
    if (r.node_id.empty() || r.node_id.size() > kMaxNodeIdLen || !valid_node_id(r.node_id)) continue;
    ResendRequest v{r.node_id, r.boot_id, {}};
    for (uint64_t seq : r.seqs)
      if (v.seqs.size() < kMaxResendSeqs && seq > (v.seqs.empty() ? 0 : v.seqs.back())) v.seqs.push_back(seq);
    if (!v.seqs.empty()) valid.push_back(std::move(v));
  }
  if (valid.empty()) return "";
  std::string msg = header_bytes(hdr, hdr.seq, 0, 1, kFlagResend);
  put_varint(&msg, 0);  // no rule groups
  put_varint(&msg, 0);  // no tags
  put_resend(&msg, valid);
  return msg;
}

std::vector<std::string> encode_ban_messages(const ReportHeader &hdr, const std::vector<BanNotice> &notices,
                                             size_t max_bytes) {
  std::vector<std::string> out;
  std::string body;
  size_t count = 0;
  auto flush = [&] {
    if (!count) return;
    std::string msg = header_bytes(hdr, hdr.seq + out.size(), 0, 1, kFlagBans);
    put_varint(&msg, 0);  // no rule groups
    put_varint(&msg, 0);  // no tags
    put_varint(&msg, count);
    out.push_back(msg + body);
    body.clear();
    count = 0;
  };
  for (const BanNotice &n : notices) {
    if (!valid_notice(n)) continue;
    std::string one;
    put_ban(&one, n, hdr.sent_unix_ms);
    if (count == kMaxBansPerMessage || (count && body.size() + one.size() + 128 > max_bytes)) flush();
    body += one;
    count++;
  }
  flush();
  return out;
}

const char *stream_name(Stream s) {
  switch (s) {
    case Stream::Reports: return "reports";
    case Stream::Bans: return "bans";
    case Stream::Resend: return "resend requests";
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
  if (flags & kFlagBans) {
    // A message of its own: no hits, no factors, no resend requests.
    if (!out.rules.empty() || !out.tags.empty() || (flags & (kFlagFactors | kFlagResend))) return DecodeError::BadBan;
    if (DecodeError e = take_bans(r, h.sent_unix_ms, &out); e != DecodeError::None) return e;
  } else if (flags & kFlagResend) {
    // A message of its own: no hits, no factors.
    if (!out.rules.empty() || !out.tags.empty() || (flags & kFlagFactors)) return DecodeError::BadResend;
    if (DecodeError e = take_resend(r, &out); e != DecodeError::None) return e;
  } else if (flags & kFlagRelay) {
    // A message of its own: hits of other hosts only.
    if (!out.rules.empty() || !out.tags.empty() || (flags & kFlagFactors)) return DecodeError::BadRelay;
    if (DecodeError e = take_relay(r, &out); e != DecodeError::None) return e;
  } else if (flags & kFlagFactors) {
    if (DecodeError e = take_factors(r, &out); e != DecodeError::None) return e;
  }
  if (r.left() != 0) return DecodeError::TrailingBytes;
  *hdr = std::move(h);
  *body = std::move(out);
  return DecodeError::None;
}

}  // namespace dt
