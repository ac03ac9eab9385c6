// test_list_file.cpp - allow and deny list files (rules/list_file.h): the formats
// accepted, the lines refused with FILE:LINE, and the rules file's allow_file/deny_file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "list_fixtures.h"
#include "rules/list_file.h"
#include "rules/rules.h"
#include "temp_dir.h"

namespace dt {
namespace {

using test::parse_list_ok;

std::string parse_error(const std::string &text) {
  ListPrefixes p;
  std::string err;
  EXPECT_FALSE(parse_list_text(text, "l.txt", &p, &err)) << "accepted: " << text;
  return err;
}

TEST(ListFile, PlainAddressesAndPrefixesOfBothFamilies) {
  const ListPrefixes p = parse_list_ok("198.18.0.1\n198.18.4.0/22\n2001:2::/48\n2001:2:0:1::7\n");
  ASSERT_EQ(p.v4.size(), 2u);
  ASSERT_EQ(p.v6.size(), 2u);
  EXPECT_EQ(list_prefix_string(p.v4[0]), "198.18.0.1/32");
  EXPECT_EQ(list_prefix_string(p.v4[1]), "198.18.4.0/22");
  EXPECT_EQ(list_prefix_string(p.v6[0]), "2001:2::/48");
  EXPECT_EQ(list_prefix_string(p.v6[1]), "2001:2:0:1::7/128");
}

TEST(ListFile, FireholNetsetWithCommentsAndBlankLines) {
  const ListPrefixes p = parse_list_ok(
      "#\n# firehol_level1\n#\n# Source URL: http://iplists.firehol.org/\n\n"
      "198.18.0.0/15\r\n  198.19.255.255  # a host\n\t\n; Spamhaus style comment\n198.18.9.0/24 ; SBL1\n");
  ASSERT_EQ(p.v4.size(), 3u);
  EXPECT_EQ(list_prefix_string(p.v4[0]), "198.18.0.0/15");
}

TEST(ListFile, IpsetSaveOutput) {
  const ListPrefixes p = parse_list_ok(
      "create blocked hash:net family inet hashsize 1024 maxelem 65536\n"
      "add blocked 198.18.0.0/24\nadd blocked 198.18.7.7\n"
      "create blocked6 hash:net family inet6 hashsize 1024 maxelem 65536\nadd blocked6 2001:2::/48\n");
  EXPECT_EQ(p.v4.size(), 2u);
  EXPECT_EQ(p.v6.size(), 1u);
}

TEST(ListFile, DuplicatesAreMergedAndOrderDoesNotMatter) {
  const ListPrefixes a = parse_list_ok("198.18.1.0/24\n198.18.0.0/24\n198.18.1.0/24\n");
  const ListPrefixes b = parse_list_ok("198.18.0.0/24\n198.18.1.0/24\n");
  EXPECT_EQ(a.v4.size(), 2u);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == parse_list_ok("198.18.0.0/24\n"));
}

TEST(ListFile, EmptyFileIsAnEmptyList) { EXPECT_EQ(parse_list_ok("# nothing yet\n\n").size(), 0u); }

TEST(ListFile, BadLinesNameFileAndLine) {
  EXPECT_EQ(parse_error("198.18.0.0/24\n198.18.0.300\n"),
            "l.txt:2: '198.18.0.300' is not an IPv4 or IPv6 address or prefix");
  EXPECT_EQ(parse_error("\n\n198.18.0.0/33\n"), "l.txt:3: '198.18.0.0/33': the prefix length must be 0 to 32");
  EXPECT_EQ(parse_error("2001:2::/129\n"), "l.txt:1: '2001:2::/129': the prefix length must be 0 to 128");
  EXPECT_EQ(parse_error("198.18.0.0/\n"), "l.txt:1: '198.18.0.0/': the prefix length must be 0 to 32");
  EXPECT_NE(parse_error("198.18.0.1-198.18.0.9\n").find("l.txt:1: '198.18.0.1-198.18.0.9': ranges are not"),
            std::string::npos);
  EXPECT_NE(parse_error("198.18.0.1 198.18.0.2\n").find("l.txt:1: one address or prefix a line"), std::string::npos);
  EXPECT_NE(parse_error("add s 198.18.0.0/24 timeout 300\n").find("l.txt:1: ipset entry options ('timeout'"),
            std::string::npos);
  EXPECT_NE(parse_error("add s\n").find("l.txt:1: an ipset line needs"), std::string::npos);
}

TEST(ListFile, HostBitsPastThePrefixAreRefused) {
  EXPECT_EQ(parse_error("198.18.0.1/24\n"),
            "l.txt:1: '198.18.0.1/24' has bits set past its /24 (did you mean the network address?)");
  EXPECT_NE(parse_error("2001:2::1/48\n").find("l.txt:1: '2001:2::1/48' has bits set"), std::string::npos);
  EXPECT_EQ(parse_list_ok("0.0.0.0/0\n::/0\n").size(), 2u);
}

TEST(ListFile, UnreadableFileSaysSo) {
  ListPrefixes p;
  std::string err;
  EXPECT_FALSE(load_list_file("/nonexistent/deny.txt", &p, &err));
  EXPECT_NE(err.find("/nonexistent/deny.txt"), std::string::npos) << err;
}

TEST(ListFile, AListOthersMayWriteIsRefused) {
  test::TempDir dir("list_file");
  dir.write("deny.txt", "198.18.5.0/24\n");
  ASSERT_EQ(chmod(dir.file("deny.txt").c_str(), 0666), 0);
  ListPrefixes p;
  std::string err;
  EXPECT_FALSE(load_list_file(dir.file("deny.txt"), &p, &err));
  EXPECT_NE(err.find("chmod go-w " + dir.file("deny.txt")), std::string::npos) << err;
  ASSERT_EQ(chmod(dir.file("deny.txt").c_str(), 0644), 0);
  EXPECT_TRUE(load_list_file(dir.file("deny.txt"), &p, &err)) << err;
}

TEST(ListFile, AFileOverTheCapIsRefusedAtTheLineThatPassesIt) {
  test::TempDir dir("list_file");
  // Entries 1..3 fit a cap of 3; line 5 (the 4th entry) passes it; the bad last line is
  // never reached: the file is not read whole first.
  dir.write("deny.txt", "198.18.0.1\n# a comment\n2001:2::1\n198.18.0.1\n198.18.0.2\nnot-an-address\n");
  ListPrefixes p;
  std::string err;
  EXPECT_FALSE(load_list_file(dir.file("deny.txt"), &p, &err, 3));
  EXPECT_EQ(err.rfind(dir.file("deny.txt") + ":5: more than 3 entries; " + list_cap_text(), 0), 0u) << err;
  EXPECT_EQ(p.size(), 0u) << "a refused file must leave *out untouched";
  EXPECT_FALSE(parse_list_text("198.18.0.1\n198.18.0.2\nnot-an-address\n", "l.txt", &p, &err, 1));
  EXPECT_EQ(err.rfind("l.txt:2: more than 1 entries", 0), 0u) << err;
  // Exactly the cap (a duplicate counts as an entry, then merges).
  dir.write("deny.txt", "198.18.0.1\n2001:2::1\n198.18.0.1\n");
  EXPECT_TRUE(load_list_file(dir.file("deny.txt"), &p, &err, 3)) << err;
  EXPECT_EQ(p.size(), 2u);
}

TEST(ListFile, LinesAcrossReadChunksAndAnOverlongLine) {
  test::TempDir dir("list_file");
  std::string text;
  for (int i = 0; i < 40000; i++)  // ~500 KB: many 64 KiB chunks, lines cut between them
    text += "198." + std::to_string(18 + i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
            std::to_string(i % 256) + "\n";
  dir.write("deny.txt", text + "2001:2::/48");  // no final newline
  ListPrefixes p;
  std::string err;
  ASSERT_TRUE(load_list_file(dir.file("deny.txt"), &p, &err)) << err;
  EXPECT_EQ(p.v4.size(), 40000u);
  EXPECT_EQ(p.v6.size(), 1u);
  dir.write("deny.txt", "198.18.0.1\n# " + std::string(200000, 'x') + "\n198.18.0.2\n");
  EXPECT_FALSE(load_list_file(dir.file("deny.txt"), &p, &err));
  EXPECT_EQ(err, dir.file("deny.txt") + ":2: a line of more than 4096 bytes");
}

TEST(ListFile, RulesFileNamesListsRelativeToItsFolder) {
  test::TempDir dir("list_file");
  const std::string rules = dir.path() + "/rules.toml";
  dir.write("rules.toml", "version = 1\nallow_file = \"allow.txt\"\ndeny_file = \"/abs/deny.txt\"\n");
  RuleSet rs = default_rules(0, 0);
  std::string err;
  ASSERT_TRUE(load_rules_file(rules, &rs, &err)) << err;
  EXPECT_EQ(rs.allow_file, dir.path() + "/allow.txt");
  EXPECT_EQ(rs.deny_file, "/abs/deny.txt");
}

TEST(ListFile, LoadRulesReadsTheListsAndRefusesABadLine) {
  test::TempDir dir("list_file");
  dir.write("allow.txt", "198.18.0.1\n");
  dir.write("deny.txt", "198.18.5.0/24\n2001:2::/48\n");
  dir.write("rules.toml", "version = 1\nallow_file = \"allow.txt\"\ndeny_file = \"deny.txt\"\n");
  LoadedRules r;
  std::string err;
  ASSERT_TRUE(load_rules(0, 0, dir.path() + "/rules.toml", &r, &err)) << err;
  EXPECT_EQ(r.allow->v4.size(), 1u);
  EXPECT_EQ(r.deny->v4.size(), 1u);
  EXPECT_EQ(r.deny->v6.size(), 1u);
  dir.write("deny.txt", "198.18.5.0/24\nnot-an-address\n");
  EXPECT_FALSE(load_rules(0, 0, dir.path() + "/rules.toml", &r, &err));
  EXPECT_EQ(err, dir.path() + "/deny.txt:2: 'not-an-address' is not an IPv4 or IPv6 address or prefix");
  EXPECT_EQ(r.deny->v6.size(), 1u) << "a refused load must leave the previous lists";
}

TEST(ListFile, ListKeysMustBeFileNames) {
  RuleSet rs = default_rules(0, 0);
  std::string err;
  EXPECT_FALSE(parse_rules("version = 1\ndeny_file = 3\n", "r.toml", &rs, &err));
  EXPECT_NE(err.find("r.toml:2: 'deny_file' must be a file name in quotes"), std::string::npos) << err;
}

}  // namespace
}  // namespace dt
