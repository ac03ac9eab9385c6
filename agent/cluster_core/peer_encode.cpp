// peer_encode.cpp - the encoder of peer messages (peer_protocol.h): reports in parts within
// a size, directed envelopes, relays, resend requests and bans messages.
#include <algorithm>

#include "cluster_core/peer_protocol.h"
#include "cluster_core/peer_wire.h"

namespace dt {
using namespace wire;
namespace {

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

// One verified source (only with kFlagVerified): family, address, remaining time.
void put_verified(std::string *msg, const VerifiedSource &v) {
  const bool v6 = v.key.rule == DT_VERIFIED_V6;
  msg->push_back(static_cast<char>(v6 ? 6 : 4));
  msg->append(reinterpret_cast<const char *>(v.key.addr) + (v6 ? 0 : 12), v6 ? 16 : 4);
  put_varint(msg, v.remaining_ms);
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
      const ReportBody body{h.rules, h.entries, {}, {}, {}, {}, {}, {}};
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

// Messages of one list section (bans, verified sources): no rule groups, no tags, then
// the count and the items, each message at most `per_message` items and `max_bytes` (less
// 128 for the header) and numbered from hdr.seq. Items `valid` refuses are left out.
template <typename T, typename Valid, typename Put>
std::vector<std::string> encode_list_messages(const ReportHeader &hdr, uint8_t flag, const std::vector<T> &items,
                                              size_t per_message, size_t max_bytes, Valid valid, Put put) {
  std::vector<std::string> out;
  std::string body;
  size_t count = 0;
  auto flush = [&] {
    if (!count) return;
    std::string msg = header_bytes(hdr, hdr.seq + out.size(), 0, 1, flag);
    put_varint(&msg, 0);  // no rule groups
    put_varint(&msg, 0);  // no tags
    put_varint(&msg, count);
    out.push_back(msg + body);
    body.clear();
    count = 0;
  };
  for (const T &item : items) {
    if (!valid(item)) continue;
    std::string one;
    put(&one, item);
    if (count == per_message || (count && body.size() + one.size() + 128 > max_bytes)) flush();
    body += one;
    count++;
  }
  flush();
  return out;
}

std::vector<std::string> encode_ban_messages(const ReportHeader &hdr, const std::vector<BanNotice> &notices,
                                             size_t max_bytes) {
  return encode_list_messages(
      hdr, kFlagBans, notices, kMaxBansPerMessage, max_bytes, [](const BanNotice &n) { return valid_notice(n); },
      [&](std::string *msg, const BanNotice &n) { put_ban(msg, n, hdr.sent_unix_ms); });
}

std::vector<std::string> encode_verified_messages(const ReportHeader &hdr, const std::vector<VerifiedSource> &sources,
                                                  size_t max_bytes) {
  return encode_list_messages(
      hdr, kFlagVerified, sources, kMaxVerifiedPerMessage, max_bytes,
      [](const VerifiedSource &v) { return valid_verified(v); }, put_verified);
}

}  // namespace dt
