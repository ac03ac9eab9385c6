// json.h - the agent's JSON documents (nlohmann::json): the value type and how it is written.
// Included only by the .cpp files that build or read JSON, not by widely included headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dt {

// Objects keep their keys in insertion order, so documents read the same as before the
// library was used (tests grep `agent stats --json` for "key":value in that order).
using Json = nlohmann::ordered_json;

// A number as printf shows it with `format` ("%.9g", "%.3f"), so readers see the values
// they always saw: text without a point or exponent stays an integer ("100", not
// "100.0"), and the rest is the double nearest the printed digits, which prints back
// the same digits (less trailing zeros). NaN and infinities, which JSON lacks, are null.
Json printed_number(const char *format, double v);

// One line of compact JSON. Strings that are not UTF-8 (a pin directory or a peer's node
// id can hold any bytes) get U+FFFD in place of the bad bytes instead of an exception.
std::string dump_json(const Json &j);

}  // namespace dt
