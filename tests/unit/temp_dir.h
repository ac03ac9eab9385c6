// temp_dir.h - a private scratch directory for a test, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace dt::test {

class TempDir {
 public:
  // /tmp/NAME.XXXXXX; path() is empty if it could not be made (check it in SetUp).
  explicit TempDir(const std::string &name) {
    std::string tmpl = "/tmp/" + name + ".XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dt::test
