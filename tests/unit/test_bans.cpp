// test_bans.cpp - bans without the kernel: prefixes and durations from text, the query
// socket's BAN/UNBAN lines, and the peer protocol's bans message (round trips, what the
// encoder leaves out, bad input refused).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bans/ban_command.h"
#include "bans/ban_render.h"
#include "bans/ban_types.h"
#include "cluster_core/peer_protocol.h"
#include "common/address.h"
#include "metrics/metrics.h"
#include "report_fixtures.h"

namespace {

using dt::test::decode_one;
using dt::test::header;

dt::BanPrefix prefix(const std::string &text) {
  dt::BanPrefix p;
  std::string err;
  EXPECT_TRUE(dt::parse_ban_prefix(text, &p, &err)) << text << ": " << err;
  return p;
}

TEST(BanPrefix, AddressesAndPrefixesOfBothFamilies) {
  EXPECT_EQ(dt::ban_prefix_text(prefix("198.18.0.7")), "198.18.0.7");
  EXPECT_EQ(prefix("198.18.0.7").len, 32);
  EXPECT_FALSE(prefix("198.18.0.7").is_v6);
  EXPECT_EQ(dt::ban_prefix_text(prefix("198.18.0.7/24")), "198.18.0.0/24") << "host bits are cleared";
  EXPECT_EQ(dt::ban_prefix_text(prefix("2001:2::7/48")), "2001:2::/48");
  EXPECT_EQ(dt::ban_prefix_text(prefix("2001:2::7")), "2001:2::7");
  EXPECT_TRUE(prefix("2001:2::/48").is_v6);
  EXPECT_EQ(dt::ban_prefix_text(prefix("198.18.1.255/23")), "198.18.0.0/23");
}

TEST(BanPrefix, RefusesWhatIsNotAPrefix) {
  dt::BanPrefix p;
  std::string err;
  for (const char *bad : {"", "nonsense", "198.18.0.0/0", "198.18.0.0/33", "2001:2::/129", "198.18.0.0/", "/24",
                          "198.18.0.0/x", "198.18.0.256"}) {
    err.clear();
    EXPECT_FALSE(dt::parse_ban_prefix(bad, &p, &err)) << "'" << bad << "' was accepted";
    EXPECT_FALSE(err.empty()) << "no message for '" << bad << "'";
  }
}

TEST(BanPrefix, Covers) {
  dt_key k{};
  ASSERT_TRUE(dt::key_from_string("198.18.0.99", &k));
  EXPECT_TRUE(dt::ban_prefix_covers(prefix("198.18.0.0/24"), k.addr));
  EXPECT_FALSE(dt::ban_prefix_covers(prefix("198.18.1.0/24"), k.addr));
  EXPECT_FALSE(dt::ban_prefix_covers(prefix("::/1"), k.addr)) << "an IPv6 ban never covers an IPv4 address";
}

TEST(BanDuration, FromSecondsToThirtyDays) {
  uint64_t ns = 0;
  std::string err;
  ASSERT_TRUE(dt::parse_ban_duration("10m", &ns, &err)) << err;
  EXPECT_EQ(ns, 600'000'000'000ull);
  ASSERT_TRUE(dt::parse_ban_duration("7d", &ns, &err)) << err;
  EXPECT_EQ(ns, 7ull * 86400 * 1'000'000'000);
  ASSERT_TRUE(dt::parse_ban_duration("30d", &ns, &err)) << err;
  for (const char *bad : {"", "0", "500ms", "31d", "721h", "x", "-1m", "0d"}) {
    err.clear();
    EXPECT_FALSE(dt::parse_ban_duration(bad, &ns, &err)) << "'" << bad << "' was accepted";
    EXPECT_NE(err.find("1s to 30d"), std::string::npos) << err;
  }
  EXPECT_EQ(dt::format_remaining(599'500'000'000ull), "9m 59s");
  EXPECT_EQ(dt::format_remaining(2 * 86400 * 1'000'000'000ull), "2d 0h");
}

TEST(BanLine, ParsesBanAndUnban) {
  dt::BanCommand c;
  std::string err;
  ASSERT_TRUE(dt::parse_ban_line("BAN 198.18.0.9 10m credential stuffing on /login", &c, &err)) << err;
  EXPECT_FALSE(c.unban);
  EXPECT_EQ(dt::ban_prefix_text(c.prefix), "198.18.0.9");
  EXPECT_EQ(c.for_ns, 600'000'000'000ull);
  EXPECT_EQ(c.reason, "credential stuffing on /login");
  ASSERT_TRUE(dt::parse_ban_line("BAN 2001:2::/64 1h", &c, &err)) << err;
  EXPECT_EQ(c.reason, "");
  ASSERT_TRUE(dt::parse_ban_line("UNBAN 2001:2::/64", &c, &err)) << err;
  EXPECT_TRUE(c.unban);
  EXPECT_TRUE(dt::is_ban_command("BAN x"));
  EXPECT_TRUE(dt::is_ban_command("UNBAN x"));
  EXPECT_FALSE(dt::is_ban_command("BANANA"));
  EXPECT_FALSE(dt::is_ban_command("user:42"));
}

TEST(BanLine, RefusesBadInputWithAReason) {
  dt::BanCommand c;
  struct Case {
    const char *line, *says;
  } cases[] = {{"BAN", "usage"},
               {"BAN 198.18.0.9", "usage"},
               {"BAN nonsense 10m", "bad prefix"},
               {"BAN 198.18.0.9 forever", "bad duration"},
               {"BAN 198.18.0.9 31d", "bad duration"},
               {"UNBAN", "usage"},
               {"UNBAN 198.18.0.9 extra", "usage"},
               {"KICK 198.18.0.9", "not a ban command"}};
  for (const auto &k : cases) {
    std::string err;
    EXPECT_FALSE(dt::parse_ban_line(k.line, &c, &err)) << "'" << k.line << "' was accepted";
    EXPECT_NE(err.find(k.says), std::string::npos) << k.line << ": " << err;
  }
  std::string err;
  EXPECT_FALSE(dt::parse_ban_line("BAN 198.18.0.9 10m " + std::string(96, 'x'), &c, &err));
  EXPECT_FALSE(dt::parse_ban_line("BAN 198.18.0.9 10m bad\x01reason", &c, &err));
}

dt::BanNotice set_of(const std::string &p, uint64_t ms, std::string reason = "why") {
  dt::BanNotice n;
  n.prefix = prefix(p);
  n.remaining_ms = ms;
  n.unix_ms = 1'700'000'000'000ull;
  n.reason = std::move(reason);
  n.origin = "crowdsec";
  n.who = "uid 0 (agent ban)";
  return n;
}

dt::BanNotice lift_of(const std::string &p) {
  dt::BanNotice n;
  n.prefix = prefix(p);
  n.remove = true;
  n.unix_ms = 1'700'000'000'123ull;
  return n;
}

TEST(BanMessage, RoundTripsSetsAndLiftsOfBothFamilies) {
  const std::vector<dt::BanNotice> in = {set_of("198.18.0.9", 600'000), set_of("2001:2::/48", 1000, ""),
                                         lift_of("198.18.4.0/22"), lift_of("2001:2::5")};
  dt::ReportHeader sent = header("h1");
  sent.seq = 5;
  dt::ReportHeader h;
  dt::ReportBody body;
  ASSERT_NO_FATAL_FAILURE(decode_one(dt::encode_ban_messages(sent, in), &h, &body));
  EXPECT_EQ(h.node_id, "h1");
  EXPECT_EQ(h.stream, dt::Stream::Bans) << "bans have a stream of their own";
  EXPECT_EQ(h.seq, 5u) << "and a seq in it: a replay is a duplicate";
  EXPECT_TRUE(body.entries.empty());
  ASSERT_EQ(body.bans.size(), in.size());
  for (size_t i = 0; i < in.size(); i++) {
    const dt::BanNotice &a = in[i], &b = body.bans[i];
    EXPECT_TRUE(a.prefix == b.prefix) << i;
    EXPECT_EQ(a.remove, b.remove) << i;
    EXPECT_EQ(a.unix_ms, b.unix_ms) << i;
    EXPECT_EQ(a.remaining_ms, b.remaining_ms) << i;
    EXPECT_EQ(a.reason, b.reason) << i;
    EXPECT_EQ(a.origin, b.origin) << i;
    EXPECT_EQ(a.who, b.who) << i;
  }
}

TEST(BanMessage, EncoderSkipsInvalidNoticesAndSplits) {
  std::vector<dt::BanNotice> in = {set_of("198.18.0.9", 0), set_of("198.18.0.9", 31ull * 86400 * 1000),
                                   set_of("198.18.0.9", 1000, "bad\nreason")};
  EXPECT_TRUE(dt::encode_ban_messages(header("h1"), in).empty()) << "invalid notices went out";
  in.clear();
  for (int i = 0; i < 1200; i++)
    in.push_back(set_of("198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256), 1000));
  dt::ReportHeader sent = header("h1");
  sent.seq = 1;
  const auto msgs = dt::encode_ban_messages(sent, in);
  ASSERT_GE(msgs.size(), 3u) << "1200 bans fit " << dt::kMaxBansPerMessage << " a message";
  size_t total = 0;
  for (const auto &m : msgs) {
    dt::ReportHeader h;
    dt::ReportBody body;
    ASSERT_EQ(dt::decode_report(m.data(), m.size(), &h, &body), dt::DecodeError::None);
    EXPECT_EQ(h.seq, 1 + static_cast<uint64_t>(&m - msgs.data())) << "consecutive seqs";
    EXPECT_LE(m.size(), dt::kMaxMessageBytes);
    total += body.bans.size();
  }
  EXPECT_EQ(total, in.size());
}

// Flips one byte of a valid message at `at` to `v` and decodes it.
dt::DecodeError decode_with(std::string msg, size_t at, uint8_t v) {
  msg[at] = static_cast<char>(v);
  dt::ReportHeader h;
  dt::ReportBody body;
  const dt::DecodeError e = dt::decode_report(msg.data(), msg.size(), &h, &body);
  if (e != dt::DecodeError::None) {
    EXPECT_TRUE(body.bans.empty()) << "a refused message left bans";
  }
  return e;
}

// A set's time left travels as an expiry by the sender's clock (its header's send time
// plus the time left): a recorded message replayed later says nothing new, and one whose
// ban had expired when it was sent is not a ban.
TEST(BanMessage, ExpiryIsAbsoluteByTheSendersClock) {
  dt::ReportHeader sent = header("h1");
  sent.seq = 1;
  std::string msg = dt::encode_ban_messages(sent, {set_of("198.18.0.0/24", 100)})[0];
  const size_t expiry = msg.size() - (8 + 1 + 3 + 1 + 8 + 1 + 17);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | static_cast<uint8_t>(msg[expiry + i]);
  EXPECT_EQ(v, sent.sent_unix_ms + 100) << "the expiry by the sender's clock";
  for (int i = 0; i < 8; i++) msg[expiry + i] = static_cast<char>((sent.sent_unix_ms >> (8 * i)) & 0xff);
  dt::ReportHeader h;
  dt::ReportBody body;
  EXPECT_EQ(dt::decode_report(msg.data(), msg.size(), &h, &body), dt::DecodeError::BadBan)
      << "expired when it was sent";
}

TEST(BanMessage, RefusesBadBans) {
  const std::string msg = dt::encode_ban_messages(header("h1"), {set_of("198.18.0.0/24", 100)})[0];
  // The ban ends the message: op, family, length, address, unix ms, expiry unix ms (by
  // the sender's clock), then reason, origin and who, each after its length.
  const size_t ban = msg.size() - (3 + 4 + 8 + 8 + 1 + 3 + 1 + 8 + 1 + 17);
  ASSERT_EQ(static_cast<uint8_t>(msg[ban]), 1) << "the test's offset is not the op byte";
  EXPECT_EQ(decode_with(msg, ban, 2), dt::DecodeError::BadBan) << "op 2";
  EXPECT_EQ(decode_with(msg, ban + 1, 5), dt::DecodeError::BadBan) << "family 5";
  EXPECT_EQ(decode_with(msg, ban + 2, 0), dt::DecodeError::BadBan) << "prefix length 0";
  EXPECT_EQ(decode_with(msg, ban + 2, 33), dt::DecodeError::BadBan) << "IPv4 /33";
  EXPECT_EQ(decode_with(msg, ban + 6, 1), dt::DecodeError::BadBan) << "host bits set";
  EXPECT_EQ(decode_with(msg, ban - 1, 0), dt::DecodeError::BadBan) << "no bans";
  EXPECT_EQ(decode_with(msg, ban + 24, '\n'), dt::DecodeError::BadBan) << "a newline in the reason";
  EXPECT_EQ(decode_with(msg, ban + 23, 96), dt::DecodeError::BadBan) << "a reason of 96 bytes";
  EXPECT_NE(decode_with(msg + "x", 0, 'D'), dt::DecodeError::None) << "trailing bytes";
  dt::ReportHeader h;
  dt::ReportBody body;
  for (size_t cut = 1; cut < msg.size() - ban; cut++)
    EXPECT_NE(dt::decode_report(msg.data(), msg.size() - cut, &h, &body), dt::DecodeError::None) << "cut " << cut;
}

}  // namespace

namespace {

dt::Ban ban_at(const std::string &p, uint64_t dropped, bool remote) {
  dt::Ban b;
  b.prefix = prefix(p);
  b.expires_ns = 1'000'000'000'000ull;
  b.origin = remote ? "h1" : "local";
  b.dropped = dropped;
  b.remote = remote;
  return b;
}

TEST(BanMetrics, CountsByOriginAndTheBusiestBansOnly) {
  dt::MetricsInfo info{"0.1.0", "edge-1", "eth0", "native", 1, 1, 10};
  info.pin_dir = "/sys/fs/bpf/dthrottle/eth0";
  dt::MapView m;
  m.bans.push_back(ban_at("198.18.0.0/24", 7, false));
  m.bans.push_back(ban_at("2001:2::/48", 0, true));
  for (size_t i = 0; i < dt::kMaxBanSeries + 5; i++)
    m.bans.push_back(ban_at("198.18.1." + std::to_string(i), 1000 + i, true));
  const std::string text = dt::render_metrics(info, m, dt::MetricsSnapshot{}, 0);
  EXPECT_NE(text.find("dthrottle_bans{from=\"local\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dthrottle_bans{from=\"peer\"} " + std::to_string(dt::kMaxBanSeries + 6) + "\n"),
            std::string::npos);
  EXPECT_NE(text.find("dthrottle_ban_packets_total{prefix=\"198.18.1.104\",origin=\"h1\",verdict=\"dropped\"} 1104\n"),
            std::string::npos)
      << "the busiest ban is listed";
  EXPECT_EQ(text.find("prefix=\"198.18.0.0/24\""), std::string::npos) << "beyond the cap: only the busiest";
  EXPECT_EQ(text.find("prefix=\"2001:2::/48\""), std::string::npos) << "a ban with no packets has no series";
  size_t series = 0;
  for (size_t at = 0; (at = text.find("\ndthrottle_ban_packets_total{", at + 1)) != std::string::npos;) series++;
  EXPECT_EQ(series, 2 * dt::kMaxBanSeries) << "dropped and would_drop of each listed ban";
}

TEST(BanRender, ExplainSaysWhatWhoAndWhy) {
  dt::Ban b = ban_at("198.18.0.0/24", 35, true);
  b.who = "uid 0 (agent ban)";
  b.reason = "stuffing";
  EXPECT_EQ(dt::ban_explain_text(b, b.expires_ns - 600'000'000'000ull),
            "198.18.0.0/24 for 10m 0s more: every packet dropped before the rules (35 so far); origin h1, set by uid 0 "
            "(agent ban): stuffing");
  EXPECT_EQ(dt::ban_explain_text(b, b.expires_ns), "198.18.0.0/24, expired (not swept yet): packets pass to the rules");
  const std::string table = dt::render_bans_text({b}, b.expires_ns - 90'000'000'000ull);
  EXPECT_NE(table.find("198.18.0.0/24"), std::string::npos) << table;
  EXPECT_NE(table.find("1m 30s"), std::string::npos) << table;
  EXPECT_EQ(dt::render_bans_text({}, 0), "no bans\n");
}

}  // namespace
