// boot_counter.cpp - the persisted, forward-only boot counter of a node.
#include "cluster/boot_counter.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/files.h"

namespace dt {

std::string boot_counter_path(const std::string &curve_key_file) {
  const std::string suffix = ".key";
  const bool keyed = curve_key_file.size() > suffix.size() &&
                     curve_key_file.compare(curve_key_file.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (keyed ? curve_key_file.substr(0, curve_key_file.size() - suffix.size()) : curve_key_file) + ".boot";
}

std::string choose_boot_file(const std::string &curve_key_file, const std::string &fallback) {
  if (curve_key_file.empty()) return fallback;
  const size_t slash = curve_key_file.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : curve_key_file.substr(0, slash);
  return access(dir.c_str(), W_OK) == 0 ? boot_counter_path(curve_key_file) : fallback;
}

namespace {

// The stored counter: false if there is none (*why empty: no file yet) or it cannot be read.
bool read_counter(const std::string &path, uint64_t *out, std::string *why) {
  std::ifstream in(path);
  if (!in) {
    if (errno != ENOENT) *why = std::string("cannot read ") + path + ": " + strerror(errno);
    return false;
  }
  uint64_t v = 0;
  if (!(in >> v) || v > UINT32_MAX) return *why = path + " does not hold a boot counter", false;
  *out = v;
  return true;
}

}  // namespace

uint32_t next_boot_counter(const std::string &path, uint64_t unix_s, std::string *warn) {
  warn->clear();
  uint64_t next = unix_s > UINT32_MAX ? UINT32_MAX : unix_s;
  if (path.empty()) return static_cast<uint32_t>(next);
  uint64_t stored = 0;
  std::string why;
  if (read_counter(path, &stored, &why) && stored + 1 > next) next = stored + 1 > UINT32_MAX ? UINT32_MAX : stored + 1;
  else if (!why.empty()) *warn = why;
  std::string err;
  if (!write_file_atomic(path, std::to_string(next) + "\n", &err)) *warn = err;
  return static_cast<uint32_t>(next);
}

}  // namespace dt
