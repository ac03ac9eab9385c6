// test_pcap_writer.cpp - the blocks of agent capture's files (agent/capture/pcap_writer.h):
// pcapng's section, interface and packet blocks (lengths, padding, the comment option) and
// classic pcap's header and records, checked field by field as a reader would parse them,
// and the capture's comments and rule labels (capture_session.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "capture/capture_session.h"
#include "capture/pcap_writer.h"
#include "dthrottle/capture.h"
#include "temp_dir.h"

namespace {

uint32_t u32(const std::string &s, size_t at) {
  uint32_t v = 0;
  memcpy(&v, s.data() + at, 4);
  return v;
}
uint16_t u16(const std::string &s, size_t at) {
  uint16_t v = 0;
  memcpy(&v, s.data() + at, 2);
  return v;
}

TEST(Pcapng, HeaderIsASectionThenOneEthernetInterface) {
  const std::string h = dt::pcapng_header(128, "eth0");
  ASSERT_GE(h.size(), 28u + 20u);
  EXPECT_EQ(u32(h, 0), 0x0A0D0D0Au) << "section header block type";
  const uint32_t shb_len = u32(h, 4);
  EXPECT_EQ(u32(h, 8), 0x1A2B3C4Du) << "byte-order magic";
  EXPECT_EQ(u32(h, shb_len - 4), shb_len) << "the section block's trailing length";
  const size_t idb = shb_len;
  EXPECT_EQ(u32(h, idb), 1u) << "interface description block";
  const uint32_t idb_len = u32(h, idb + 4);
  EXPECT_EQ(idb + idb_len, h.size()) << "nothing after the interface block";
  EXPECT_EQ(idb_len % 4, 0u);
  EXPECT_EQ(u16(h, idb + 8), 1u) << "LINKTYPE_ETHERNET";
  EXPECT_EQ(u32(h, idb + 12), 128u) << "snaplen";
  EXPECT_EQ(u16(h, idb + 16), 2u) << "first option: if_name";
  EXPECT_EQ(h.substr(idb + 20, 4), "eth0");
  EXPECT_EQ(u32(h, idb + idb_len - 4), idb_len);
}

TEST(Pcapng, PacketCarriesItsBytesTimeAndComment) {
  const uint8_t frame[5] = {1, 2, 3, 4, 5};
  const uint64_t t = 1'700'000'000'123'456'789ull;
  const std::string p = dt::pcapng_packet(t, frame, 5, 60, "verdict=dropped rule=web");
  EXPECT_EQ(u32(p, 0), 6u) << "enhanced packet block";
  const uint32_t len = u32(p, 4);
  EXPECT_EQ(len, p.size());
  EXPECT_EQ(len % 4, 0u) << "blocks are padded to 32 bits";
  EXPECT_EQ((uint64_t{u32(p, 12)} << 32) | u32(p, 16), t) << "nanosecond timestamp (if_tsresol 9)";
  EXPECT_EQ(u32(p, 20), 5u) << "captured length";
  EXPECT_EQ(u32(p, 24), 60u) << "original length";
  EXPECT_EQ(memcmp(p.data() + 28, frame, 5), 0);
  const size_t opt = 28 + 8;  // 5 bytes padded to 8
  EXPECT_EQ(u16(p, opt), 1u) << "opt_comment";
  EXPECT_EQ(u16(p, opt + 2), 24u);
  EXPECT_EQ(p.substr(opt + 4, 24), "verdict=dropped rule=web");
  EXPECT_EQ(u32(p, opt + 28), 0u) << "opt_endofopt";
  EXPECT_EQ(u32(p, len - 4), len);
}

TEST(Pcapng, NoCommentNoOptions) {
  const uint8_t frame[4] = {};
  const std::string p = dt::pcapng_packet(0, frame, 4, 4, "");
  EXPECT_EQ(p.size(), 28u + 4u + 4u) << "header, 4 bytes of frame, trailing length";
}

TEST(Pcap, HeaderAndRecord) {
  const std::string h = dt::pcap_header(64);
  ASSERT_EQ(h.size(), 24u);
  EXPECT_EQ(u32(h, 0), 0xA1B23C4Du) << "nanosecond pcap magic";
  EXPECT_EQ(u32(h, 16), 64u);
  EXPECT_EQ(u32(h, 20), 1u) << "LINKTYPE_ETHERNET";
  const uint8_t frame[3] = {9, 8, 7};
  const std::string r = dt::pcap_packet(5'000'000'042ull, frame, 3, 100);
  ASSERT_EQ(r.size(), 16u + 3u);
  EXPECT_EQ(u32(r, 0), 5u);
  EXPECT_EQ(u32(r, 4), 42u);
  EXPECT_EQ(u32(r, 8), 3u);
  EXPECT_EQ(u32(r, 12), 100u);
}

TEST(PcapWriter, FileHoldsHeaderThenPackets) {
  char path[] = "/tmp/dthrottle-pcap-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string err;
  {
    dt::PcapWriter w;
    ASSERT_TRUE(w.open(path, dt::PcapFormat::Pcapng, 128, "", &err)) << err;
    const uint8_t frame[8] = {};
    ASSERT_TRUE(w.write(1, frame, 8, 8, "x", &err)) << err;
    ASSERT_TRUE(w.close(&err)) << err;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  const uint8_t frame[8] = {};
  EXPECT_EQ(ss.str(), dt::pcapng_header(128, "") + dt::pcapng_packet(1, frame, 8, 8, "x"));
}

TEST(PcapWriter, UnwritablePathSaysWhich) {
  dt::PcapWriter w;
  std::string err;
  EXPECT_FALSE(w.open("/nonexistent-dir/x.pcapng", dt::PcapFormat::Pcapng, 128, "", &err));
  EXPECT_NE(err.find("/nonexistent-dir/x.pcapng"), std::string::npos) << err;
}

std::string read_all(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t mode_of(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// Opens path as a capture file; the error ("" if it opened).
std::string open_error(const std::string &path) {
  dt::PcapWriter w;
  std::string err;
  if (w.open(path, dt::PcapFormat::Pcap, 64, "", &err)) return "";
  return err.empty() ? "refused without a reason" : err;
}

TEST(PcapWriter, NewFileIsPrivateWhateverTheUmask) {
  dt::test::TempDir dir("dt-pcap");
  ASSERT_FALSE(dir.path().empty());
  const mode_t old = umask(022);
  const std::string err = open_error(dir.file("new.pcap"));
  umask(old);
  ASSERT_EQ(err, "");
  EXPECT_EQ(mode_of(dir.file("new.pcap")), 0600u) << "a capture holds payloads: 0600, not 0644";
}

TEST(PcapWriter, ASymlinkAtThePathIsRefusedNotFollowed) {
  dt::test::TempDir dir("dt-pcap");
  ASSERT_TRUE(dir.write("target", "precious"));
  ASSERT_EQ(symlink(dir.file("target").c_str(), dir.file("link.pcap").c_str()), 0);
  const std::string err = open_error(dir.file("link.pcap"));
  EXPECT_NE(err.find(dir.file("link.pcap") + " is a symbolic link"), std::string::npos) << err;
  EXPECT_EQ(read_all(dir.file("target")), "precious") << "the capture was written through the symlink";
  // A dangling one too: it must not create its target.
  ASSERT_EQ(symlink(dir.file("nowhere").c_str(), dir.file("dangling.pcap").c_str()), 0);
  EXPECT_NE(open_error(dir.file("dangling.pcap")), "");
  EXPECT_NE(access(dir.file("nowhere").c_str(), F_OK), 0) << "the capture created the symlink's target";
}

TEST(PcapWriter, AnExistingFileOfOursIsEmptiedAndMadePrivate) {
  dt::test::TempDir dir("dt-pcap");
  ASSERT_TRUE(dir.write("old.pcap", std::string(1000, 'x')));
  ASSERT_EQ(chmod(dir.file("old.pcap").c_str(), 0644), 0);
  ASSERT_EQ(open_error(dir.file("old.pcap")), "");
  EXPECT_EQ(mode_of(dir.file("old.pcap")), 0600u);
  EXPECT_EQ(read_all(dir.file("old.pcap")), dt::pcap_header(64));
}

TEST(PcapWriter, AFifoOrAHardLinkIsRefused) {
  dt::test::TempDir dir("dt-pcap");
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  // With a reader, fstat refuses it.
  const int reader = open(dir.file("fifo").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const std::string fifo_err = open_error(dir.file("fifo"));
  EXPECT_NE(fifo_err.find("not a regular file"), std::string::npos) << fifo_err;
  close(reader);
  // Without one the open fails (ENXIO) instead of blocking for ever: tried in a child
  // process, killed if it is still there after 5 s.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(open_error(dir.file("fifo")).find(dir.file("fifo")) != std::string::npos ? 0 : 1);
  int status = -1;
  for (int i = 0; i < 500 && waitpid(child, &status, WNOHANG) == 0; i++) usleep(10'000);
  if (waitpid(child, &status, WNOHANG) == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    ADD_FAILURE() << "opening a FIFO nobody reads as the capture file blocked (5 s)";
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a FIFO without a reader: no error naming it";
  }
  ASSERT_TRUE(dir.write("other", "precious"));
  ASSERT_EQ(link(dir.file("other").c_str(), dir.file("hard.pcap").c_str()), 0);
  const std::string err = open_error(dir.file("hard.pcap"));
  EXPECT_NE(err.find("hard links"), std::string::npos) << err;
  EXPECT_EQ(read_all(dir.file("other")), "precious") << "the capture emptied the other name's file";
}

TEST(CaptureComment, VerdictRuleHookCpu) {
  EXPECT_EQ(dt::capture_comment(DT_CAP_DROPPED, "web", DT_CAP_HOOK_XDP, 3), "verdict=dropped rule=web hook=xdp cpu=3");
  EXPECT_EQ(dt::capture_comment(DT_CAP_WOULD_DROP, "@ban", DT_CAP_HOOK_TC, 0),
            "verdict=would-drop rule=@ban hook=tc cpu=0");
  EXPECT_EQ(dt::capture_comment(DT_CAP_PASSED, "default", DT_CAP_HOOK_XDP, 1),
            "verdict=passed rule=default hook=xdp cpu=1");
}

TEST(CaptureComment, RuleLabels) {
  EXPECT_EQ(dt::capture_rule_label(DT_CAP_RULE_BAN, ""), "@ban");
  EXPECT_EQ(dt::capture_rule_label(DT_CAP_RULE_DENY_LIST, ""), "@deny-list");
  EXPECT_EQ(dt::capture_rule_label(DT_CAP_RULE_ALLOW_LIST, ""), "@allow-list");
  EXPECT_EQ(dt::capture_rule_label(DT_CAP_RULE_NONE, ""), "@none");
  EXPECT_EQ(dt::capture_rule_label(0, ""), "default");
  EXPECT_EQ(dt::capture_rule_label(0, "base"), "base");
  EXPECT_EQ(dt::capture_rule_label(5, ""), "#5");
  EXPECT_EQ(dt::capture_rule_label(5, "dns"), "dns");
}

}  // namespace
