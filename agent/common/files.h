// files.h - files replaced atomically, and files removed when their owner goes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/no_copy.h"

namespace dt {

// The mode of the files an agent writes (status, reload outcome, explain, attachment
// record, lock): root's group may read them (`agent stats` as a member of it), others not.
constexpr unsigned kRuntimeFileMode = 0640;

// Replaces `path` atomically with `text` (readers never see half a file): writes
// `path`.tmp (mode kRuntimeFileMode, never through a symlink) and renames it over `path`. False with a sentence in *err
// (what could not be opened, written or renamed, and why) on failure: `path` is then left as it was.
[[nodiscard]] bool write_file_atomic(const std::string &path, const std::string &text, std::string *err);

// Why nothing can be written beside `path` (a file `path`.probe is written and removed):
// "" if something can, else the sentence write_file_atomic gives. For a reader that
// waits for a file another process fails to write (agent reload, agent explain).
std::string unwritable_reason(const std::string &path);

// Whether a file or directory the agent trusts (a key, a .pub, a list file, the pin
// directory) is safe as far as its owner and mode go: owned by root or by the agent's own
// uid, and not writable by its group or others (a secret: nor readable by them). `what`
// names it ("a secret key", "a list file"). False with a sentence naming the path, what is
// wrong and the command that fixes it (chown root PATH, chmod go-w PATH, chmod 600 PATH).
bool check_trusted_path(const std::string &path, const char *what, bool secret, std::string *err);

// A writer of one file written again and again (status files): logs a failure once,
// not at every write, and logs when writing works again.
class RewrittenFile {
 public:
  explicit RewrittenFile(std::string path = "") : path_(std::move(path)) {}
  const std::string &path() const { return path_; }
  // write_file_atomic; false (logged if it is a new failure) if it failed.
  bool write(const std::string &text);

 private:
  std::string path_;
  std::string failure_;  // the last write's error, "" if it worked
};

// Files a process publishes while it runs (status, reload outcome), removed when the
// owner goes, last added first. Missing files are fine (never written, or removed).
class RemoveOnExit : NoCopy {
 public:
  RemoveOnExit() = default;
  ~RemoveOnExit();

  // Returns `path` (a copy), so a member can be initialised with what it adds.
  std::string add(const std::string &path);

 private:
  std::vector<std::string> paths_;
};

}  // namespace dt
