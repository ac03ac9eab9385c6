// pin_dir.cpp - the pin directory: on bpffs, created, locked by one agent, its records.
#include "dataplane/pin_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/errno_str.h"
#include "common/files.h"
#include "common/log.h"
#include "common/runtime_files.h"
#include "dthrottle/common.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

namespace dt {
namespace {

constexpr const char *kBpffsRoot = "/sys/fs/bpf";

bool is_bpffs(const std::string &path) {
  struct statfs st {};
  return statfs(path.c_str(), &st) == 0 && static_cast<unsigned long>(st.f_type) == BPF_FS_MAGIC;
}

std::string nearest_existing(std::string path) {
  while (!path.empty() && access(path.c_str(), F_OK) != 0) {
    size_t slash = path.find_last_of('/');
    path = slash == 0 ? "/" : path.substr(0, slash == std::string::npos ? 0 : slash);
  }
  return path.empty() ? "/" : path;
}

}  // namespace

std::string default_pin_dir(const std::string &iface) { return std::string(DT_DEFAULT_PIN_ROOT) + "/" + iface; }

bool ensure_bpffs(const std::string &pin_dir, std::string *err) {
  std::string existing = nearest_existing(pin_dir);
  if (is_bpffs(existing)) return true;
  const std::string root = kBpffsRoot;
  bool under_root = pin_dir.compare(0, root.size() + 1, root + "/") == 0;
  if (under_root && access(kBpffsRoot, F_OK) == 0 && !is_bpffs(kBpffsRoot)) {
    if (mount("bpf", kBpffsRoot, "bpf", 0, "mode=0700") == 0) {
      DT_INFO("mounted the BPF filesystem at %s", kBpffsRoot);
      return true;
    }
    *err = std::string("the BPF filesystem is not mounted at ") + kBpffsRoot + " and mounting it failed (" +
           errno_str(errno) + "); mount it with: mount -t bpf -o mode=0700 bpf /sys/fs/bpf";
    return false;
  }
  *err = "pin directory " + pin_dir + " is not on a BPF filesystem (" + existing +
         " is not bpffs); mount one with: mount -t bpf -o mode=0700 bpf " + existing;
  return false;
}

bool make_pin_dir(const std::string &path, std::string *err) {
  for (size_t pos = 1; pos <= path.size(); pos++) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      *err = "cannot create pin directory " + part + ": " + errno_str(errno);
      return false;
    }
  }
  return true;
}

int lock_pin_dir(const std::string &pin_dir, std::string *err) {
  std::string path = runtime_file(pin_dir, kLockFile);
  mkdir(kRuntimeDir, 0755);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, kRuntimeFileMode);
  if (fd < 0) {
    *err = "cannot create lock file " + path + ": " + errno_str(errno);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    (void)n;
    *err = "another dthrottle agent (pid " + std::string(pid[0] ? pid : "?") +
           ") is already running with pin directory " + pin_dir + "; stop it first (kill -TERM that pid)";
    close(fd);
    return -1;
  }
  if (fchmod(fd, kRuntimeFileMode) != 0)
    DT_WARN("cannot set the mode of %s: %s", path.c_str(), errno_str(errno).c_str());
  std::string me = std::to_string(getpid());
  if (ftruncate(fd, 0) == 0 && pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The PID is only informational; the lock itself is what counts.
  }
  return fd;
}

std::string recorded_hook(const std::string &pin_dir) {
  std::ifstream in(runtime_file(pin_dir, kAttachFile));
  std::string line;
  std::getline(in, line);
  return line;
}

bool qdisc_recorded(const std::string &pin_dir) {
  std::ifstream rec(runtime_file(pin_dir, kAttachFile));
  std::string line, created;
  std::getline(rec, line);
  std::getline(rec, created);
  return created == "clsact-created";
}

bool agent_running(const std::string &pin_dir) {
  int fd = ::open(runtime_file(pin_dir, kLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

}  // namespace dt
