// test_files.cpp - a runtime file that cannot be written says so: write_file_atomic's
// failures (open, rename) with the path and the reason, and the sentence agent reload
// and agent explain print when the agent cannot write its answer (unwritable_reason).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/files.h"
#include "temp_dir.h"

namespace {

std::string read_all(const std::string &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(WriteFileAtomic, ADirectoryThatIsNotThereIsReported) {
  dt::test::TempDir dir("dt-files");
  const std::string path = dir.path() + "/gone/x.reload";  // an unwritable place, even for root
  std::string err;
  EXPECT_FALSE(dt::write_file_atomic(path, "1 ok\n", &err));
  EXPECT_NE(err.find("cannot create " + path + ".tmp: No such file or directory"), std::string::npos) << err;
}

TEST(WriteFileAtomic, AFailedRenameIsReportedAndLeavesNothing) {
  dt::test::TempDir dir("dt-files");
  const std::string path = dir.path() + "/status";
  ASSERT_EQ(mkdir(path.c_str(), 0700), 0);  // a directory where the file should go: rename fails
  std::string err;
  EXPECT_FALSE(dt::write_file_atomic(path, "x\n", &err));
  EXPECT_NE(err.find("cannot rename " + path + ".tmp to " + path), std::string::npos) << err;
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << "the temporary file was left behind";
  rmdir(path.c_str());
}

// Runtime files are 0640 (they were 0644 before), also where a crash left a .tmp of
// another mode; a symlink planted at the .tmp is refused, never followed.
TEST(WriteFileAtomic, WritesMode0640AndNeverThroughASymlink) {
  dt::test::TempDir dir("dt-files");
  const std::string path = dir.file("status"), tmp = path + ".tmp";
  ASSERT_TRUE(dir.write("status.tmp", "left by a crash\n"));
  ASSERT_EQ(chmod(tmp.c_str(), 0666), 0);
  std::string err;
  ASSERT_TRUE(dt::write_file_atomic(path, "1 ok\n", &err)) << err;
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  const std::string target = dir.file("target");
  ASSERT_TRUE(dir.write("target", "untouched\n"));
  ASSERT_EQ(symlink(target.c_str(), tmp.c_str()), 0);
  EXPECT_FALSE(dt::write_file_atomic(path, "2 ok\n", &err));
  EXPECT_NE(err.find("cannot create " + tmp), std::string::npos) << err;
  EXPECT_EQ(read_all(target), "untouched\n");
  EXPECT_EQ(read_all(path), "1 ok\n");
}

TEST(WriteFileAtomic, AFailureLeavesTheOldFile) {
  dt::test::TempDir dir("dt-files");
  const std::string path = dir.path() + "/status";
  std::string err;
  ASSERT_TRUE(dt::write_file_atomic(path, "1 ok\n", &err)) << err;
  ASSERT_EQ(mkdir((path + ".tmp").c_str(), 0700), 0);  // the temporary name taken: open fails
  EXPECT_FALSE(dt::write_file_atomic(path, "2 ok\n", &err));
  EXPECT_EQ(read_all(path), "1 ok\n");
  rmdir((path + ".tmp").c_str());
}

// What agent reload prints when the agent's answer cannot be written beside its file.
TEST(UnwritableReason, NamesWhatCannotBeWrittenAndWhy) {
  dt::test::TempDir dir("dt-files");
  const std::string unwritable = dir.path() + "/no-such-dir/_sys_fs_bpf_x.reload";
  const std::string why = dt::unwritable_reason(unwritable);
  EXPECT_NE(why.find(dir.path() + "/no-such-dir/"), std::string::npos) << why;
  EXPECT_NE(why.find("No such file or directory"), std::string::npos) << why;
  const std::string writable = dir.path() + "/_sys_fs_bpf_x.reload";
  EXPECT_EQ(dt::unwritable_reason(writable), "");
  EXPECT_NE(access((writable + ".probe").c_str(), F_OK), 0) << "the probe file was left behind";
}

TEST(RewrittenFile, ReportsEveryFailedWrite) {
  dt::test::TempDir dir("dt-files");
  dt::RewrittenFile f(dir.path() + "/gone/status.json");
  EXPECT_FALSE(f.write("{}\n"));
  EXPECT_FALSE(f.write("{}\n")) << "a failure lasting is still a failure (logged once)";
  dt::RewrittenFile ok(dir.path() + "/status.json");
  EXPECT_TRUE(ok.write("{}\n"));
  EXPECT_EQ(read_all(ok.path()), "{}\n");
}

}  // namespace

namespace {

constexpr uid_t kNobodyUid = 65534;

TEST(TrustedPath, OwnerAndModeDecide) {
  dt::test::TempDir dir("dt-trusted");
  ASSERT_TRUE(dir.write("f", "x"));
  std::string err;
  ASSERT_EQ(chmod(dir.file("f").c_str(), 0644), 0);
  EXPECT_TRUE(dt::check_trusted_path(dir.file("f"), "a list file", false, &err)) << err;
  EXPECT_FALSE(dt::check_trusted_path(dir.file("f"), "a secret key", true, &err));
  EXPECT_NE(err.find("may read it (mode 0644): fix it with: chmod 600 " + dir.file("f")), std::string::npos) << err;
  for (unsigned mode : {0664u, 0646u, 0666u}) {
    ASSERT_EQ(chmod(dir.file("f").c_str(), mode), 0);
    EXPECT_FALSE(dt::check_trusted_path(dir.file("f"), "a list file", false, &err)) << std::oct << mode;
    EXPECT_NE(err.find(dir.file("f") + " is a list file but its group or others may write it"), std::string::npos)
        << err;
    EXPECT_NE(err.find("chmod go-w " + dir.file("f")), std::string::npos) << err;
  }
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  EXPECT_FALSE(dt::check_trusted_path(dir.path(), "the pin directory", false, &err));
  EXPECT_NE(err.find("(mode 0777)"), std::string::npos) << err;
  ASSERT_EQ(chmod(dir.path().c_str(), 0700), 0);
  EXPECT_TRUE(dt::check_trusted_path(dir.path(), "the pin directory", false, &err)) << err;
}

TEST(TrustedPath, AnotherUsersFileIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to nobody";
  dt::test::TempDir dir("dt-trusted");
  ASSERT_TRUE(dir.write("f", "x"));
  ASSERT_EQ(chmod(dir.file("f").c_str(), 0644), 0);
  ASSERT_EQ(chown(dir.file("f").c_str(), kNobodyUid, 0), 0);
  std::string err;
  EXPECT_FALSE(dt::check_trusted_path(dir.file("f"), "a list file", false, &err));
  EXPECT_NE(err.find("belongs to uid 65534, not to root or the agent's uid"), std::string::npos) << err;
  EXPECT_NE(err.find("chown root " + dir.file("f")), std::string::npos) << err;
  ASSERT_EQ(chown(dir.path().c_str(), kNobodyUid, 0), 0);
  EXPECT_FALSE(dt::check_trusted_path(dir.path(), "the pin directory", false, &err));
}

}  // namespace
