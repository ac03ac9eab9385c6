// temp_dir.h - a private scratch directory for a test, removed with everything in it.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "common/no_copy.h"

namespace dt::test {

class TempDir : NoCopy {
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
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  // Writes `text` to file(name), replacing what was there; false if it could not.
  bool write(const std::string &name, const std::string &text) const {
    std::ofstream out(file(name), std::ios::trunc);
    out << text;
    return static_cast<bool>(out.flush());
  }

 private:
  std::string path_;
};

// A fixture with a scratch directory of its own (tmp_, named after the test suite and
// removed after the test); the test fails in SetUp if it could not be made. Members may
// be initialised from tmp_ (it is made first); a subclass's SetUp calls this one first.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(tmp_.path().empty()) << "mkdtemp failed"; }

  TempDir tmp_{std::string("dt-") + ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()};
};

}  // namespace dt::test
