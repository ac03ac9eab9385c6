// test_fingerprint.cpp - agent fingerprint (agent/fingerprint/): pcapng read back from the
// capture writer, header fields of frames, the dominant values and the proposed rule on
// a reflection flood (UDP source port 123, one length) mixed with ordinary traffic.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capture/pcap_writer.h"
#include "common/json.h"
#include "fingerprint/fingerprint.h"
#include "fingerprint/fingerprint_session.h"
#include "fingerprint/packet_fields.h"
#include "fingerprint/pcapng_reader.h"

namespace {

// An Ethernet + IPv4 + UDP (or TCP) frame of `len` bytes from src.
std::string frame(const char *src, uint8_t proto, uint16_t sport, uint16_t dport, uint32_t len, uint8_t ttl = 64,
                  uint8_t flags = 0) {
  std::string f(std::max<uint32_t>(len, 14 + 20 + 20), '\0');
  f[12] = 0x08, f[13] = 0x00;
  f[14] = 0x45, f[14 + 8] = static_cast<char>(ttl), f[14 + 9] = static_cast<char>(proto);
  inet_pton(AF_INET, src, &f[14 + 12]);
  f[34] = static_cast<char>(sport >> 8), f[35] = static_cast<char>(sport & 0xff);
  f[36] = static_cast<char>(dport >> 8), f[37] = static_cast<char>(dport & 0xff);
  if (proto == 6) f[34 + 13] = static_cast<char>(flags);
  return f.substr(0, len);
}

dt::Sample sample(const std::string &fr, bool dropped) {
  dt::Sample s;
  EXPECT_TRUE(dt::parse_fields(fr, static_cast<uint32_t>(fr.size()), &s.f));
  s.dropped = dropped;
  return s;
}

TEST(Fingerprint, ReadsWhatCaptureWrites) {
  const std::string a = frame("198.18.7.9", 17, 123, 40000, 482), b = frame("198.18.1.1", 6, 5555, 443, 60, 57, 0x02);
  std::string file = dt::pcapng_header(128, "eth0");
  file += dt::pcapng_packet(1, reinterpret_cast<const uint8_t *>(a.data()), 128, 482,
                            "verdict=dropped rule=x hook=xdp cpu=0");
  file += dt::pcapng_packet(2, reinterpret_cast<const uint8_t *>(b.data()), 60, 60,
                            "verdict=passed rule=web hook=xdp cpu=1");
  std::vector<dt::CapturedPacket> got;
  bool truncated = false;
  std::string err;
  ASSERT_TRUE(dt::read_pcapng(file, 10, &got, &truncated, &err)) << err;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FALSE(truncated);
  EXPECT_EQ(got[0].orig_len, 482u);
  EXPECT_EQ(got[0].data.size(), 128u);
  EXPECT_EQ(dt::comment_value(got[0].comment, "verdict"), "dropped");
  EXPECT_EQ(dt::comment_value(got[1].comment, "rule"), "web");
  dt::PacketFields f;
  ASSERT_TRUE(dt::parse_fields(got[1].data, got[1].orig_len, &f));
  EXPECT_EQ(f.proto, 6);
  EXPECT_EQ(f.sport, 5555);
  EXPECT_EQ(f.dport, 443);
  EXPECT_EQ(f.ttl, 57);
  EXPECT_EQ(f.tcp_flags, 0x02);
  EXPECT_EQ(dt::source_text(f), "198.18.1.1");
  got.clear();
  ASSERT_TRUE(dt::read_pcapng(file, 1, &got, &truncated, &err));
  EXPECT_TRUE(truncated) << "more packets than asked for";
}

TEST(Fingerprint, RefusesBadFiles) {
  std::vector<dt::CapturedPacket> got;
  bool truncated = false;
  std::string err;
  EXPECT_FALSE(dt::read_pcapng(dt::pcap_header(128), 10, &got, &truncated, &err)) << "classic pcap has no verdicts";
  std::string cut = dt::pcapng_header(128, "eth0");
  const std::string a = frame("198.18.7.9", 17, 123, 1, 100);
  cut += dt::pcapng_packet(1, reinterpret_cast<const uint8_t *>(a.data()), 100, 100, "verdict=dropped");
  cut.resize(cut.size() - 10);
  EXPECT_FALSE(dt::read_pcapng(cut, 10, &got, &truncated, &err));
  EXPECT_NE(err.find("cut short"), std::string::npos) << err;
  dt::PacketFields f;
  EXPECT_FALSE(dt::parse_fields(std::string(20, '\0'), 20, &f)) << "not IP";
  EXPECT_FALSE(dt::parse_fields(a.substr(0, 30), 100, &f)) << "the IP header cut off";
}

TEST(Fingerprint, HostileFilesAreBounded) {
  // Every prefix of a valid file, and the file with each byte flipped: an error or packets,
  // never a read out of bounds (run under ASan in the sanitizer build).
  const std::string a = frame("198.18.7.9", 6, 123, 1, 100, 64, 0x12);
  std::string file = dt::pcapng_header(128, "eth0");
  file += dt::pcapng_packet(1, reinterpret_cast<const uint8_t *>(a.data()), 100, 100, "verdict=dropped rule=x");
  file += dt::pcapng_packet(2, reinterpret_cast<const uint8_t *>(a.data()), 40, 100, "verdict=passed");
  size_t parsed = 0;
  for (size_t n = 0; n <= file.size(); n++) {
    for (size_t flip = 0; flip < (n == file.size() ? file.size() : 1); flip++) {
      std::string f = file.substr(0, n);
      if (n == file.size()) f[flip] = static_cast<char>(f[flip] ^ 0xff);
      std::vector<dt::CapturedPacket> got;
      bool truncated = false;
      std::string err;
      dt::read_pcapng(f, 10, &got, &truncated, &err);
      for (const auto &p : got) {
        dt::PacketFields pf;
        parsed += dt::parse_fields(p.data, p.orig_len, &pf);
      }
    }
  }
  EXPECT_GT(parsed, 0u);
}

TEST(Fingerprint, TcpFlagsText) {
  EXPECT_EQ(dt::tcp_flags_text(0x02), "SYN,!FIN,!RST,!PSH,!ACK,!URG,!ECE,!CWR");
  EXPECT_EQ(dt::tcp_flags_text(0xff), "FIN,SYN,RST,PSH,ACK,URG,ECE,CWR");
}

// What a fingerprint must tell apart: an NTP reflection flood (UDP sport 123, 482 bytes, 50 reflectors) and
// ordinary traffic (TCP to 443 and DNS answers of varied lengths, 200 clients).
std::vector<dt::Sample> reflection_mix() {
  std::vector<dt::Sample> s;
  for (int i = 0; i < 2000; i++) {
    const std::string src = "203.0.113." + std::to_string(i % 50);
    s.push_back(sample(frame(src.c_str(), 17, 123, static_cast<uint16_t>(1024 + i % 3000), 482, 50), i % 40 != 0));
  }
  for (int i = 0; i < 1000; i++) {
    const std::string src = "198.18." + std::to_string(i % 200 / 100) + "." + std::to_string(i % 100);
    if (i % 2)
      s.push_back(sample(frame(src.c_str(), 6, static_cast<uint16_t>(30000 + i), 443, 60 + i % 900, 60, 0x10), false));
    else s.push_back(sample(frame(src.c_str(), 17, 53, static_cast<uint16_t>(30000 + i), 80 + i % 400, 55), false));
  }
  dt::mark_ordinary(&s);
  return s;
}

TEST(Fingerprint, ReflectionFlood) {
  const std::vector<dt::Sample> s = reflection_mix();
  const auto reports = dt::field_reports(s, 3);
  ASSERT_EQ(reports.size(), 6u);
  ASSERT_FALSE(reports[1].top.empty());
  EXPECT_EQ(reports[1].top[0].value, "udp 123") << "the source port dominates";
  EXPECT_DOUBLE_EQ(reports[1].top[0].dropped_share, 1.0);
  EXPECT_DOUBLE_EQ(reports[1].top[0].ordinary_share, 0.0);
  EXPECT_EQ(reports[3].top[0].value, "482");
  const dt::Fingerprint fp = dt::find_fingerprint(s, dt::FingerprintParams{});
  EXPECT_EQ(fp.ordinary_total, 1000u) << "the reflectors' passed packets are not ordinary";
  EXPECT_GE(double(fp.dropped) / double(fp.dropped_total), 0.95);
  EXPECT_LT(double(fp.ordinary) / double(fp.ordinary_total), 0.01);
  const std::string rule = dt::fingerprint_rule(fp, "ntp-flood");
  EXPECT_NE(rule.find("proto = \"udp\"\n"), std::string::npos) << rule;
  EXPECT_NE(rule.find("sport = 123\n"), std::string::npos) << rule;
  EXPECT_NE(rule.find("action = \"deny\"\ndry_run = true"), std::string::npos) << rule;
}

TEST(Fingerprint, JsonHasTheTextsFigures) {
  const std::vector<dt::Sample> s = reflection_mix();
  dt::FingerprintOptions opt;
  opt.name = "ntp-flood";
  const dt::Json j = dt::Json::parse(dt::render_fingerprint_json(s, 7, opt));
  const dt::Fingerprint fp = dt::find_fingerprint(s, dt::FingerprintParams{});
  EXPECT_EQ(j["skipped"], 7);
  EXPECT_EQ(j["ordinary"], 1000);
  EXPECT_EQ(j["fields"][1]["field"], "sport");
  EXPECT_EQ(j["fields"][1]["values"][0]["value"], "udp 123");
  EXPECT_EQ(j["fields"][1]["values"][0]["dropped_share"], 1);
  EXPECT_EQ(j["fingerprint"]["dropped"], fp.dropped);
  EXPECT_EQ(j["fingerprint"]["ordinary_total"], 1000);
  EXPECT_EQ(j["fingerprint"]["rule"], dt::fingerprint_rule(fp, "ntp-flood"));
  EXPECT_NE(j["fingerprint"]["conditions"].dump().find("\"sport 123\""), std::string::npos) << j.dump();
  // No dropped sample: no fields, no fingerprint.
  const dt::Json none = dt::Json::parse(dt::render_fingerprint_json({}, 0, opt));
  EXPECT_TRUE(none["fingerprint"].is_null());
  EXPECT_TRUE(none["fields"].empty());
}

TEST(Fingerprint, LengthRangeWhenNothingElseTells) {
  // Attack and ordinary alike in protocol and ports; the attack's frames are 1000-1100 bytes.
  std::vector<dt::Sample> s;
  for (int i = 0; i < 400; i++) s.push_back(sample(frame("203.0.113.1", 17, 5000, 53, 1000 + i % 101), true));
  for (int i = 0; i < 400; i++) s.push_back(sample(frame("198.18.0.1", 17, 5000, 53, 60 + i % 200), false));
  dt::mark_ordinary(&s);
  const dt::Fingerprint fp = dt::find_fingerprint(s, dt::FingerprintParams{});
  EXPECT_EQ(fp.ordinary, 0u);
  EXPECT_GE(fp.dropped, 380u);
  EXPECT_NE(dt::fingerprint_rule(fp, "x").find("len = \""), std::string::npos) << dt::fingerprint_rule(fp, "x");
}

TEST(Fingerprint, NothingTellsApart) {
  std::vector<dt::Sample> s;
  for (int i = 0; i < 100; i++) s.push_back(sample(frame("203.0.113.1", 17, 5000, 53, 100), i % 2));
  for (int i = 0; i < 100; i++) s.push_back(sample(frame("198.18.0.1", 17, 5000, 53, 100), false));
  dt::mark_ordinary(&s);
  const dt::Fingerprint fp = dt::find_fingerprint(s, dt::FingerprintParams{});
  EXPECT_TRUE(fp.conditions.empty()) << "identical traffic: no rule can tell them apart";
}

}  // namespace
