// files.cpp - atomic file replacement and files removed on scope exit.
#include "common/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace dt {

void write_file_atomic(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (ok) rename(tmp.c_str(), path.c_str());
  else unlink(tmp.c_str());
}

RemoveOnExit::~RemoveOnExit() {
  for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) unlink(it->c_str());
}

std::string RemoveOnExit::add(const std::string &path) {
  paths_.push_back(path);
  return path;
}

}  // namespace dt
