// files.cpp - atomic file replacement and files removed on scope exit.
#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace dt {

bool write_file_atomic(const std::string &path, const std::string &text, std::string *err) {
  const std::string tmp = path + ".tmp";
  // Never through a symlink; an existing .tmp (a crash's) keeps its mode through O_CREAT: fchmod.
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, kRuntimeFileMode);
  if (fd < 0) return *err = "cannot create " + tmp + ": " + strerror(errno), false;
  if (fchmod(fd, kRuntimeFileMode) != 0) {
    *err = "cannot set the mode of " + tmp + ": " + strerror(errno);
    close(fd);
    unlink(tmp.c_str());
    return false;
  }
  const ssize_t n = write(fd, text.data(), text.size());
  const int write_errno = errno;
  const bool complete = n == static_cast<ssize_t>(text.size());
  const int closed = close(fd);  // reports a delayed write error (NFS, quotas) too
  const int close_errno = errno;
  if (!complete || closed != 0) {
    *err = "cannot write " + tmp + ": " +
           (!complete ? (n < 0 ? strerror(write_errno) : "short write (is the disk full?)") : strerror(close_errno));
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *err = "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string unwritable_reason(const std::string &path) {
  const std::string probe = path + ".probe";
  std::string err;
  if (!write_file_atomic(probe, "", &err)) return err;
  unlink(probe.c_str());
  return "";
}

bool RewrittenFile::write(const std::string &text) {
  std::string err;
  if (write_file_atomic(path_, text, &err)) {
    if (!failure_.empty()) DT_INFO("%s is written again", path_.c_str());
    failure_.clear();
    return true;
  }
  if (err != failure_) DT_WARN("%s", err.c_str());
  failure_ = err;
  return false;
}

RemoveOnExit::~RemoveOnExit() {
  for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) unlink(it->c_str());
}

std::string RemoveOnExit::add(const std::string &path) {
  paths_.push_back(path);
  return path;
}

bool check_trusted_path(const std::string &path, const char *what, bool secret, std::string *err) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return *err = "cannot read " + path + ": " + strerror(errno), false;
  if (st.st_uid != 0 && st.st_uid != geteuid())
    return *err = path + " is " + what + " but belongs to uid " + std::to_string(st.st_uid) +
                  ", not to root or the agent's uid: whoever owns it can change it; give it to root with: chown root " +
                  path,
           false;
  const mode_t forbidden = secret ? 077 : 022;
  if ((st.st_mode & forbidden) == 0) return true;
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  const bool readable = secret && (st.st_mode & 044);
  *err = path + " is " + what + " but its group or others may " + (readable ? "read" : "write") + " it (mode " + mode +
         "): fix it with: " + (secret ? "chmod 600 " : "chmod go-w ") + path;
  return false;
}

}  // namespace dt
