// files.h - files replaced atomically, and files removed when their owner goes.
#pragma once

#include <string>
#include <vector>

namespace dt {

// Replaces `path` atomically with `text` (readers never see half a file): writes
// `path`.tmp and renames it over `path`. On a failed write `path` is left as it was.
void write_file_atomic(const std::string &path, const std::string &text);

// Files a process publishes while it runs (status, reload outcome), removed when the
// owner goes, last added first. Missing files are fine (never written, or removed).
class RemoveOnExit {
 public:
  RemoveOnExit() = default;
  RemoveOnExit(const RemoveOnExit &) = delete;
  RemoveOnExit &operator=(const RemoveOnExit &) = delete;
  ~RemoveOnExit();

  // Returns `path` (a copy), so a member can be initialised with what it adds.
  std::string add(const std::string &path);

 private:
  std::vector<std::string> paths_;
};

}  // namespace dt
