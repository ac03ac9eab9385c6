// errno_str.h - an errno value (either sign: libbpf returns -errno) as strerror's text.
#pragma once

#include <cstring>
#include <string>

namespace dt {

inline std::string errno_str(int e) { return std::string(strerror(e < 0 ? -e : e)); }

}  // namespace dt
