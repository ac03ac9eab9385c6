// fingerprint_rule.cpp - the narrowest rule that still matches the attack (a greedy choice
// of conditions), and that rule as TOML.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "fingerprint/fingerprint.h"

namespace dt {
namespace {

struct Pool {
  std::vector<const PacketFields *> dropped, ordinary;  // of the fingerprint's family
};

bool all_match(const std::vector<Condition> &cs, const PacketFields &f) {
  for (const Condition &c : cs)
    if (!matches(c, f)) return false;
  return true;
}

uint64_t count_matching(const std::vector<const PacketFields *> &fs, const std::vector<Condition> &cs) {
  uint64_t n = 0;
  for (const PacketFields *f : fs) n += all_match(cs, *f);
  return n;
}

bool has_field(const std::vector<Condition> &cs, Field f) {
  for (const Condition &c : cs)
    if (c.field == f || (f == Field::Len && c.field == Field::LenRange) ||
        (f == Field::LenRange && c.field == Field::Len))
      return true;
  return false;
}

// The most common value of `field` among the dropped samples the conditions still match.
bool mode_of(const std::vector<const PacketFields *> &dropped, const std::vector<Condition> &cs, Field field,
             Condition *out) {
  std::map<uint32_t, uint64_t> counts;
  for (const PacketFields *f : dropped) {
    if (!all_match(cs, *f)) continue;
    Condition probe{field, 0, 0, f->proto};
    if (field == Field::Proto) probe.value = f->proto;
    else if (field == Field::Sport) probe.value = (uint32_t{f->proto} << 16) | f->sport;
    else if (field == Field::Dport) probe.value = (uint32_t{f->proto} << 16) | f->dport;
    else if (field == Field::Flags) probe.value = f->tcp_flags;
    else probe.value = f->len;
    if (matches(probe, *f)) counts[probe.value]++;
  }
  if (counts.empty()) return false;
  const auto best =
      std::max_element(counts.begin(), counts.end(), [](auto &a, auto &b) { return a.second < b.second; });
  *out = {field, best->first, 0,
          field == Field::Sport || field == Field::Dport ? static_cast<uint8_t>(best->first >> 16) : uint8_t{0}};
  if (field == Field::Flags) out->proto = 6;
  if (field == Field::Proto) out->proto = static_cast<uint8_t>(best->first);
  return true;
}

// The lengths of the middle 95% of the dropped samples the conditions still match.
bool len_range_of(const std::vector<const PacketFields *> &dropped, const std::vector<Condition> &cs, Condition *out) {
  std::vector<uint32_t> lens;
  for (const PacketFields *f : dropped)
    if (all_match(cs, *f)) lens.push_back(f->len);
  if (lens.empty()) return false;
  std::sort(lens.begin(), lens.end());
  const size_t cut = static_cast<size_t>(std::floor(lens.size() * 0.025));
  *out = {Field::LenRange, lens[cut], lens[lens.size() - 1 - cut], 0};
  return true;
}

bool expressible_proto(uint8_t p) { return p == 6 || p == 17 || p == 1 || p == 58; }

std::vector<Condition> candidates(const Pool &pool, const std::vector<Condition> &cs) {
  std::vector<Condition> out;
  for (Field f : {Field::Proto, Field::Sport, Field::Dport, Field::Flags, Field::Len}) {
    Condition c;
    if (has_field(cs, f) || !mode_of(pool.dropped, cs, f, &c)) continue;
    if (expressible_proto(c.proto) || f == Field::Len) out.push_back(c);
  }
  Condition r;
  if (!has_field(cs, Field::LenRange) && len_range_of(pool.dropped, cs, &r) && r.value != r.hi) out.push_back(r);
  return out;
}

// Adds c, with the protocol a port or flags condition implies.
void add_condition(std::vector<Condition> *cs, const Condition &c) {
  if (c.field != Field::Proto && c.field != Field::Len && c.field != Field::LenRange && !has_field(*cs, Field::Proto))
    cs->push_back({Field::Proto, c.proto, 0, c.proto});
  cs->push_back(c);
}

Pool pool_of(const std::vector<Sample> &samples, bool v6) {
  Pool p;
  for (const Sample &s : samples) {
    if (s.f.v6 != v6) continue;
    if (s.dropped) p.dropped.push_back(&s.f);
    else if (s.ordinary) p.ordinary.push_back(&s.f);
  }
  return p;
}

}  // namespace

Fingerprint find_fingerprint(const std::vector<Sample> &samples, const FingerprintParams &p) {
  Fingerprint fp;
  uint64_t v6 = 0, all = 0;
  for (const Sample &s : samples) v6 += s.dropped && s.f.v6, all += s.dropped;
  fp.v6 = v6 * 2 > all;
  const Pool pool = pool_of(samples, fp.v6);
  fp.dropped_total = pool.dropped.size(), fp.ordinary_total = pool.ordinary.size();
  const double need = p.coverage * static_cast<double>(fp.dropped_total);
  for (int round = 0; round < 8 && fp.dropped_total; round++) {
    const uint64_t leak_now = count_matching(pool.ordinary, fp.conditions);
    if (fp.ordinary_total && !fp.conditions.empty() && double(leak_now) < p.leak * double(fp.ordinary_total)) break;
    std::vector<Condition> best;
    uint64_t best_leak = leak_now, best_hit = 0;
    for (const Condition &c : candidates(pool, fp.conditions)) {
      std::vector<Condition> next = fp.conditions;
      add_condition(&next, c);
      const uint64_t hit = count_matching(pool.dropped, next), leak = count_matching(pool.ordinary, next);
      if (double(hit) < need) continue;
      const bool better = fp.ordinary_total
                              ? (leak < best_leak || (leak == best_leak && !best.empty() && hit > best_hit))
                              : hit > best_hit;  // no ordinary samples: the most specific
      if (better) best = next, best_leak = leak, best_hit = hit;
    }
    if (best.empty()) break;
    fp.conditions = best;
  }
  fp.dropped = count_matching(pool.dropped, fp.conditions);
  fp.ordinary = count_matching(pool.ordinary, fp.conditions);
  return fp;
}

std::string condition_text(const Condition &c) {
  switch (c.field) {
    case Field::Proto: return std::string("proto ") + (c.proto == 6 ? "tcp" : c.proto == 17 ? "udp" : "icmp");
    case Field::Sport: return "sport " + std::to_string(c.value & 0xffff);
    case Field::Dport: return "dport " + std::to_string(c.value & 0xffff);
    case Field::Flags: return "tcp_flags " + tcp_flags_text(static_cast<uint8_t>(c.value));
    case Field::Len: return "len " + std::to_string(c.value);
    case Field::LenRange: return "len " + std::to_string(c.value) + "-" + std::to_string(c.hi);
    case Field::Ttl: return "ttl " + std::to_string(c.value);
  }
  return "";
}

std::string fingerprint_rule(const Fingerprint &fp, const std::string &name) {
  std::string out = "[[rule]]\nname = \"" + name + "\"\ncidr = \"" + (fp.v6 ? "::/0" : "0.0.0.0/0") + "\"\n";
  for (const Condition &c : fp.conditions) {
    switch (c.field) {
      case Field::Proto:
        out += std::string("proto = \"") + (c.proto == 6 ? "tcp" : c.proto == 17 ? "udp" : "icmp") + "\"\n";
        break;
      case Field::Sport: out += "sport = " + std::to_string(c.value & 0xffff) + "\n"; break;
      case Field::Dport: out += "dport = " + std::to_string(c.value & 0xffff) + "\n"; break;
      case Field::Flags: out += "tcp_flags = \"" + tcp_flags_text(static_cast<uint8_t>(c.value)) + "\"\n"; break;
      case Field::Len: out += "len = " + std::to_string(c.value) + "\n"; break;
      case Field::LenRange: out += "len = \"" + std::to_string(c.value) + "-" + std::to_string(c.hi) + "\"\n"; break;
      case Field::Ttl: break;  // no rule condition reads the TTL
    }
  }
  return out +
         "action = \"deny\"\ndry_run = true              # watch its would-drops first (agent stats), then remove\n";
}

}  // namespace dt
