// test_line_file.cpp - the line-file reader shared by the config, peers and key files.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/line_file.h"
#include "temp_dir.h"

namespace {

std::vector<std::string> texts(const std::vector<dt::FileLine> &lines) {
  std::vector<std::string> out;
  for (const auto &l : lines) out.push_back(std::to_string(l.number) + ":" + l.text);
  return out;
}

TEST(LineFile, CommentsAfterABlankAndNumbersKept) {
  const std::string text = "# head\n\n  a = 1  # note\nb = /x#y\r\n\t\nc\n# tail";
  EXPECT_EQ(texts(dt::content_lines(text, dt::Comments::AfterBlank)),
            (std::vector<std::string>{"3:a = 1", "4:b = /x#y", "6:c"}))
      << "'#' after a blank starts a comment, inside a value it does not; CR and tabs are blanks";
}

TEST(LineFile, WholeLineCommentsLeaveValuesWhole) {
  const std::string text = "# a key file\npublic = ab #cd\n  # indented comment\nsecret = #x";
  EXPECT_EQ(texts(dt::content_lines(text, dt::Comments::WholeLine)),
            (std::vector<std::string>{"2:public = ab #cd", "4:secret = #x"}))
      << "Z85 keys may hold '#': only a line that starts with it is a comment";
}

TEST(LineFile, SplitKeyValue) {
  const dt::KeyValue kv = dt::split_key_value(" rate =  10/m = x ");
  EXPECT_EQ(kv.key, "rate");
  EXPECT_EQ(kv.value, "10/m = x") << "the first '=' splits";
  EXPECT_TRUE(kv.has_value);
  const dt::KeyValue bare = dt::split_key_value("keep");
  EXPECT_EQ(bare.key, "keep");
  EXPECT_FALSE(bare.has_value);
  EXPECT_TRUE(dt::split_key_value("x =").has_value) << "an empty value is still a value";
}

TEST(LineFile, ReadTextFileSaysWhichStepFailed) {
  dt::test::TempDir dir("dtlinefile");
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  ASSERT_TRUE(dir.write("f", "a\nb"));
  std::string text;
  dt::ReadFailure failed;
  ASSERT_TRUE(dt::read_text_file(dir.file("f"), &text, &failed)) << failed.reason;
  EXPECT_EQ(text, "a\nb");
  EXPECT_FALSE(dt::read_text_file(dir.file("missing"), &text, &failed));
  EXPECT_STREQ(failed.step, "open");
  EXPECT_EQ(failed.reason, "No such file or directory");
  EXPECT_FALSE(dt::read_text_file(dir.path(), &text, &failed)) << "a directory cannot be read as a file";
  EXPECT_STREQ(failed.step, "read");
}

}  // namespace
