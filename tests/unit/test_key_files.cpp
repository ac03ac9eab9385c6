// test_key_files.cpp - the modes of the key files (no one else may read a .key):
// `agent keygen` writes the .key 0600 also over a file of another mode, never writes
// through a symlink or a hard link; the agent, the hub and `agent check` (load_curve_keys)
// refuse a .key its group or others may read, or that is not a regular file, with the fix
// (chmod 600 FILE).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent_args.h"
#include "cluster/curve.h"
#include "cluster/key_files.h"
#include "commands/commands.h"
#include "temp_dir.h"

namespace {

class KeyFilesTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_EQ(mkdir(dir_.file("peers").c_str(), 0755), 0);
  }
  // `agent keygen NAME --dir DIR`: its exit status; its stderr in err_.
  int keygen(const std::string &name) {
    return dt::test::run_captured(dt::cmd_keygen, {"keygen", name, "--dir", dir_.path()}, &err_);
  }
  unsigned mode_of(const std::string &path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }
  std::string slurp(const std::string &path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // load_curve_keys on NAME.key with the peers directory holding NAME.pub.
  bool load(const std::string &name, std::string *err) {
    std::filesystem::copy_file(dir_.file(name + ".pub"), dir_.file("peers/" + name + ".pub"),
                               std::filesystem::copy_options::overwrite_existing);
    dt::CurveKeys keys;
    return dt::load_curve_keys(dir_.file(name + ".key"), dir_.file("peers"), &keys, err);
  }

  dt::test::TempDir dir_{"dt-keys"};
  std::string err_;
};

TEST_F(KeyFilesTest, KeygenWritesTheKey0600OverAFileOfAnotherMode) {
  ASSERT_TRUE(dir_.write("web1.key", "an old file\n"));
  ASSERT_EQ(chmod(dir_.file("web1.key").c_str(), 0644), 0);
  ASSERT_EQ(keygen("web1"), 0) << err_;
  EXPECT_EQ(mode_of(dir_.file("web1.key")), 0600u);
  EXPECT_EQ(mode_of(dir_.file("web1.pub")), 0644u);
  EXPECT_NE(slurp(dir_.file("web1.key")).find("secret = "), std::string::npos);
}

TEST_F(KeyFilesTest, KeygenNeverWritesThroughASymlink) {
  ASSERT_TRUE(dir_.write("elsewhere", "not a key\n"));
  for (const char *file : {"web1.key", "web1.pub"}) {
    ASSERT_EQ(symlink(dir_.file("elsewhere").c_str(), dir_.file(file).c_str()), 0);
    EXPECT_EQ(keygen("web1"), 1) << file;
    EXPECT_NE(err_.find("will not write " + dir_.file(file) + ": it is a symlink"), std::string::npos) << err_;
    EXPECT_EQ(slurp(dir_.file("elsewhere")), "not a key\n") << "written through the symlink " << file;
    ASSERT_EQ(unlink(dir_.file(file).c_str()), 0);
  }
}

TEST_F(KeyFilesTest, KeygenReplacesAHardLinkInsteadOfWritingIntoIt) {
  ASSERT_TRUE(dir_.write("elsewhere", "someone else's file\n"));
  ASSERT_EQ(link(dir_.file("elsewhere").c_str(), dir_.file("web1.key").c_str()), 0);
  ASSERT_EQ(keygen("web1"), 0) << err_;
  EXPECT_EQ(slurp(dir_.file("elsewhere")), "someone else's file\n");
  EXPECT_EQ(mode_of(dir_.file("web1.key")), 0600u);
}

TEST_F(KeyFilesTest, AKeyOthersMayReadIsRefusedWithTheFix) {
  ASSERT_EQ(keygen("web1"), 0) << err_;
  std::string err;
  ASSERT_TRUE(load("web1", &err)) << err;
  for (unsigned mode : {0640u, 0604u, 0644u, 0620u}) {
    ASSERT_EQ(chmod(dir_.file("web1.key").c_str(), mode), 0);
    EXPECT_FALSE(load("web1", &err)) << std::oct << mode;
    EXPECT_NE(err.find("chmod 600 " + dir_.file("web1.key")), std::string::npos) << err;
  }
  EXPECT_NE(err.find("(mode 0620)"), std::string::npos) << err;
  ASSERT_EQ(chmod(dir_.file("web1.key").c_str(), 0400), 0);  // LoadCredential='s mode
  EXPECT_TRUE(load("web1", &err)) << err;
}

TEST_F(KeyFilesTest, APubOthersMayWriteOrAKeyOfAnotherUserIsRefused) {
  ASSERT_EQ(keygen("web1"), 0) << err_;
  std::string err;
  ASSERT_TRUE(load("web1", &err)) << err;
  ASSERT_EQ(chmod(dir_.file("web1.pub").c_str(), 0666), 0);  // load() copies it with its mode
  EXPECT_FALSE(load("web1", &err));
  EXPECT_NE(err.find("chmod go-w " + dir_.file("peers/web1.pub")), std::string::npos) << err;
  ASSERT_EQ(chmod(dir_.file("web1.pub").c_str(), 0644), 0);
  ASSERT_EQ(chmod(dir_.file("peers/web1.pub").c_str(), 0644), 0);
  ASSERT_TRUE(load("web1", &err)) << err;
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to nobody";
  ASSERT_EQ(chown(dir_.file("web1.key").c_str(), 65534, 0), 0);
  EXPECT_FALSE(load("web1", &err));
  EXPECT_NE(err.find("chown root " + dir_.file("web1.key")), std::string::npos) << err;
}

TEST_F(KeyFilesTest, AKeyThatIsNotARegularFileIsRefused) {
  ASSERT_EQ(keygen("web1"), 0) << err_;
  ASSERT_EQ(unlink(dir_.file("web1.key").c_str()), 0);
  ASSERT_EQ(mkfifo(dir_.file("web1.key").c_str(), 0600), 0);
  std::string err;
  EXPECT_FALSE(load("web1", &err));  // and does not hang opening the FIFO
  EXPECT_NE(err.find(dir_.file("web1.key") + " is not a regular file"), std::string::npos) << err;
}

}  // namespace
