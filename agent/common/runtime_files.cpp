// runtime_files.cpp - where an agent's runtime files are.
#include "common/runtime_files.h"

namespace dt {

std::string runtime_file(const std::string &pin_dir, const std::string &suffix) {
  std::string name = pin_dir;
  for (char &c : name)
    if (c == '/') c = '_';
  return std::string(kRuntimeDir) + "/" + name + suffix;
}

}  // namespace dt
