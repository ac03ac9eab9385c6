// go_duration.h - Go's time.Duration text ("4h", "3h59m55.756182786s", "-19.7ms"), as the
// CrowdSec Local API writes a decision's remaining time.
#pragma once

#include <cstdint>
#include <string_view>

namespace dt {

// Parses Go's duration syntax: an optional sign, then one or more number-unit pairs
// (fractions allowed; units ns, us, µs, μs, ms, s, m, h), or a bare "0". *ns is signed
// (an expired decision has a negative one). False on anything else or on a value past
// ±max_abs_ns (so that no input, however long its digits, overflows).
bool parse_go_duration(std::string_view text, int64_t max_abs_ns, int64_t *ns);

}  // namespace dt
