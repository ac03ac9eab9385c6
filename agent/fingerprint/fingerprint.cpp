// fingerprint.cpp - dominant header values and the rule that matches the attack.
#include "fingerprint/fingerprint.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace dt {
namespace {

std::string proto_text(uint8_t proto) {
  switch (proto) {
    case 6: return "tcp";
    case 17: return "udp";
    case 1:
    case 58: return "icmp";
    default: return std::to_string(proto);
  }
}

// A field's value in a sample (false: the sample has none), as one number.
bool value_of(Field field, const PacketFields &f, uint32_t *v) {
  switch (field) {
    case Field::Proto: return *v = f.proto, true;
    case Field::Sport: return *v = (uint32_t{f.proto} << 16) | f.sport, f.has_ports;
    case Field::Dport: return *v = (uint32_t{f.proto} << 16) | f.dport, f.has_ports;
    case Field::Len:
    case Field::LenRange: return *v = f.len, true;
    case Field::Ttl: return *v = f.ttl, true;
    case Field::Flags: return *v = f.tcp_flags, f.has_flags;
  }
  return false;
}

std::string value_text(Field field, uint32_t v) {
  switch (field) {
    case Field::Proto: return proto_text(static_cast<uint8_t>(v));
    case Field::Sport:
    case Field::Dport: return proto_text(static_cast<uint8_t>(v >> 16)) + " " + std::to_string(v & 0xffff);
    case Field::Flags: return tcp_flags_text(static_cast<uint8_t>(v));
    default: return std::to_string(v);
  }
}

// Counts of each value of `field` among dropped and ordinary samples.
std::map<uint32_t, std::pair<uint64_t, uint64_t>> value_counts(const std::vector<Sample> &s, Field field) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> out;
  for (const Sample &x : s) {
    uint32_t v;
    if (!value_of(field, x.f, &v)) continue;
    if (x.dropped) out[v].first++;
    else if (x.ordinary) out[v].second++;
  }
  return out;
}

}  // namespace

const char *field_name(Field f) {
  switch (f) {
    case Field::Proto: return "proto";
    case Field::Sport: return "sport";
    case Field::Dport: return "dport";
    case Field::Len: return "len";
    case Field::LenRange: return "len";
    case Field::Ttl: return "ttl";
    case Field::Flags: return "tcp_flags";
  }
  return "?";
}

std::string tcp_flags_text(uint8_t flags) {
  static const char *const kNames[] = {"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"};
  std::string set, clear;
  for (int i = 0; i < 8; i++) {
    std::string &to = (flags >> i) & 1 ? set : clear;
    to += std::string(to.empty() ? "" : ",") + ((flags >> i) & 1 ? "" : "!") + kNames[i];
  }
  return set.empty() ? clear : clear.empty() ? set : set + "," + clear;
}

void mark_ordinary(std::vector<Sample> *samples) {
  std::set<std::string> offenders;
  for (const Sample &s : *samples)
    if (s.dropped) offenders.insert(std::string(reinterpret_cast<const char *>(s.f.src), 16) + (s.f.v6 ? "6" : "4"));
  for (Sample &s : *samples)
    s.ordinary =
        !s.dropped && !offenders.count(std::string(reinterpret_cast<const char *>(s.f.src), 16) + (s.f.v6 ? "6" : "4"));
}

std::vector<FieldReport> field_reports(const std::vector<Sample> &samples, size_t top) {
  uint64_t dropped = 0, ordinary = 0;
  for (const Sample &s : samples) dropped += s.dropped, ordinary += s.ordinary;
  std::vector<FieldReport> out;
  for (Field field : {Field::Proto, Field::Sport, Field::Dport, Field::Len, Field::Ttl, Field::Flags}) {
    FieldReport r;
    r.field = field;
    for (const auto &[v, c] : value_counts(samples, field)) {
      ValueShare vs{value_text(field, v), c.first, c.second, dropped ? double(c.first) / double(dropped) : 0,
                    ordinary ? double(c.second) / double(ordinary) : 0};
      if (vs.dropped_share >= 0.01) r.top.push_back(vs);
    }
    std::sort(r.top.begin(), r.top.end(), [](const ValueShare &a, const ValueShare &b) {
      return a.dropped_share - a.ordinary_share > b.dropped_share - b.ordinary_share;
    });
    if (r.top.size() > top) r.top.resize(top);
    out.push_back(std::move(r));
  }
  return out;
}

bool matches(const Condition &c, const PacketFields &f) {
  uint32_t v;
  if (!value_of(c.field, f, &v)) return false;
  if (c.field == Field::LenRange) return v >= c.value && v <= c.hi;
  return v == c.value;
}

}  // namespace dt
