// test_periodic_timer.cpp - the event loop's timers (catch up without bursts) and the
// runtime-file helpers (atomic replacement, removal on scope exit).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/files.h"
#include "common/periodic_timer.h"

namespace {

TEST(PeriodicTimer, KeepsItsPaceWhenServedALittleLate) {
  dt::PeriodicTimer t(200, 1000);
  EXPECT_FALSE(t.due(999)) << "due before its first deadline";
  EXPECT_TRUE(t.due(1000));
  t.advance(1030);  // served 30 late: the next deadline stays on the grid
  EXPECT_EQ(t.deadline(), 1200u) << "a late tick must not shift the following ones";
}

TEST(PeriodicTimer, CatchesUpWithoutABurst) {
  dt::PeriodicTimer t(200, 1000);
  t.advance(1750);  // the loop was held up past three deadlines
  EXPECT_EQ(t.deadline(), 1950u) << "a held-up loop must get one tick now and the next a period later";
  EXPECT_FALSE(t.due(1750)) << "no catch-up tick right after the one just served";
}

TEST(PeriodicTimer, TimeoutRoundsUpToTheDeadline) {
  EXPECT_EQ(dt::PeriodicTimer::timeout_ms(0, 1), 1) << "a wake-up before the deadline would spin";
  EXPECT_EQ(dt::PeriodicTimer::timeout_ms(0, 2'000'000), 2);
  EXPECT_EQ(dt::PeriodicTimer::timeout_ms(5'000'000, 1'000'000), 0) << "a passed deadline must not wait";
}

std::string read_all(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RuntimeFiles, WrittenAtomicallyAndRemovedOnExit) {
  char tmpl[] = "/tmp/dt-files-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, a = dir + "/a", b = dir + "/b";
  {
    dt::RemoveOnExit files;
    EXPECT_EQ(files.add(a), a) << "add() returns the path it was given";
    files.add(b);  // never written: its removal must be harmless
    std::string err;
    EXPECT_TRUE(dt::write_file_atomic(a, "1 ok\n", &err)) << err;
    EXPECT_TRUE(dt::write_file_atomic(a, "2 ok\n", &err)) << err;
    EXPECT_EQ(read_all(a), "2 ok\n") << "the second write must replace the first";
    struct stat st {};
    EXPECT_NE(stat((a + ".tmp").c_str(), &st), 0) << "the temporary file was left behind";
  }
  EXPECT_NE(access(a.c_str(), F_OK), 0) << a << " outlived its owner";
  EXPECT_EQ(rmdir(dir.c_str()), 0) << "files were left in " << dir;
}

}  // namespace
