// parse_values.h - strict parsers for command-line values (rates, durations, counts).
// Each returns false and fills *err with a sentence naming the bad value.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// "100", "0.1666", "100/s", "6/m", "3600/h": packets per second (fractions allowed).
// Refuses byte units (see parse_budget_rate) for values that count packets or queries.
bool parse_rate(const std::string &s, double *per_second, std::string *err);

// Byte units (docs/rules.md "Byte budgets"): B; kB, MB, GB (SI, 1000); KiB, MiB, GiB (1024);
// bit, kbit, Mbit, Gbit (bits, /8). Case-sensitive: "Mb" is neither a megabit nor a megabyte.
extern const char kByteUnits[];

// A rule's rate: packets per second as parse_rate, or bytes per second with a byte
// unit ("100kB/s", "10Mbit/s", "1MiB/s"; /s, /m, /h as for packets; no suffix: /s).
// *bytes tells which. Byte rates are in bytes per second.
bool parse_budget_rate(const std::string &s, double *per_second, bool *bytes, std::string *err);

// A rule's burst: whole packets ("50"), or bytes with a byte unit ("10kB", "1500B",
// "96kbit"), which must come to a whole number of bytes. *bytes tells which.
bool parse_budget_burst(const std::string &s, uint64_t *tokens, bool *bytes, std::string *err);

// The refusal of a rate and burst in different units ("" when they agree), naming
// how each was written: rate_src and burst_src are e.g. "--rate 100" or "rate = 100".
std::string budget_unit_mismatch(bool rate_bytes, bool burst_bytes, const std::string &rate_src,
                                 const std::string &burst_src);

// "100 kB/s", "1.5 MB", "512 B": a byte amount for display (SI prefixes).
std::string format_bytes(double bytes);

// "200ms", "1s", "1.5s", "2m", "1h", "500us"; a bare number is seconds. Result in ns, > 0.
bool parse_duration(const std::string &s, uint64_t *ns, std::string *err);

// A whole number in [min, max].
bool parse_count(const std::string &s, uint64_t min, uint64_t max, uint64_t *out, std::string *err);

}  // namespace dt
