// appendf.h - printf onto the end of a std::string, however long the text: how the text
// views (agent stats, top, suggest, fingerprint) build their output.
#pragma once

#include <string>

namespace dt {

// Appends printf's output to *out, whatever its length.
void appendf(std::string *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace dt
