// no_copy.h - a base for classes that own something (a descriptor, a thread, a map's pins):
// derived from NoCopy, a class can be neither copied nor moved unless it says how.
#pragma once

namespace dt {

class NoCopy {
 public:
  NoCopy(const NoCopy &) = delete;
  NoCopy &operator=(const NoCopy &) = delete;

 protected:
  NoCopy() = default;
  ~NoCopy() = default;
};

}  // namespace dt
