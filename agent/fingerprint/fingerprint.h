// fingerprint.h - `agent fingerprint`'s analysis (docs/capture.md "Attack fingerprints"):
// which header values dominate the dropped samples of a capture against the ordinary ones,
// and the narrowest rule that matches the attack and not the rest. Pure: samples in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fingerprint/packet_fields.h"

namespace dt {

// One captured packet: dropped (or would-drop) or passed. `ordinary`: passed, and its
// source has no dropped sample (a flooding source's admitted packets are the attack's).
struct Sample {
  PacketFields f;
  bool dropped = false;
  bool ordinary = false;
};

// Marks each passed sample ordinary unless its source also has a dropped sample.
void mark_ordinary(std::vector<Sample> *samples);

enum class Field { Proto, Sport, Dport, Len, Ttl, Flags, LenRange };
const char *field_name(Field f);

// One value of a field: its share of the dropped samples and of the ordinary ones.
struct ValueShare {
  std::string value;  // as the rules file writes it ("udp", "123", "SYN,!ACK,...")
  uint64_t dropped = 0, ordinary = 0;
  double dropped_share = 0, ordinary_share = 0;
};
struct FieldReport {
  Field field = Field::Proto;
  std::vector<ValueShare> top;  // most dominant first: dropped share minus ordinary share
};

// Each field's `top` values that dominate the dropped samples (share at least 1%).
std::vector<FieldReport> field_reports(const std::vector<Sample> &samples, size_t top);

// A rule condition: field == value (Sport, Dport and Flags with their protocol), or
// lo <= len <= hi for LenRange.
struct Condition {
  Field field = Field::Proto;
  uint32_t value = 0, hi = 0;
  uint8_t proto = 0;
};

struct FingerprintParams {
  double coverage = 0.95;  // the rule must match at least this share of the dropped samples
  double leak = 0.01;      // and is narrowed until it matches under this share of the ordinary ones
};

struct Fingerprint {
  bool v6 = false;                            // the family of most dropped samples (the rule's)
  std::vector<Condition> conditions;          // empty: nothing tells the attack apart
  uint64_t dropped = 0, dropped_total = 0;    // dropped samples of that family it matches, of all
  uint64_t ordinary = 0, ordinary_total = 0;  // ordinary samples it matches, of all
};

bool matches(const Condition &c, const PacketFields &f);
Fingerprint find_fingerprint(const std::vector<Sample> &samples, const FingerprintParams &p);

// A condition as the report shows it: "sport 123", "len 468-470", "tcp_flags SYN,!ACK,...".
std::string condition_text(const Condition &c);

// The rule as TOML to paste into the rules file: a deny rule in dry run.
std::string fingerprint_rule(const Fingerprint &fp, const std::string &name);

// "SYN,!ACK,..." for an exact flags byte (every flag named, set or !clear).
std::string tcp_flags_text(uint8_t flags);

}  // namespace dt
