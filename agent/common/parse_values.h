// parse_values.h - strict parsers for command-line values (rates, durations, counts).
// Each returns false and fills *err with a sentence naming the bad value.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// "100", "0.1666", "100/s", "6/m", "3600/h": packets per second (fractions allowed).
bool parse_rate(const std::string &s, double *per_second, std::string *err);

// "200ms", "1s", "1.5s", "2m", "1h", "500us"; a bare number is seconds. Result in ns, > 0.
bool parse_duration(const std::string &s, uint64_t *ns, std::string *err);

// A whole number in [min, max].
bool parse_count(const std::string &s, uint64_t min, uint64_t max, uint64_t *out,
                 std::string *err);

}  // namespace dt
