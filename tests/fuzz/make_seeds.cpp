// make_seeds.cpp - writes a few valid reports as the fuzzer's seed corpus.
#include <cstdio>
#include <fstream>
#include <string>

#include "cluster/report_signing.h"
#include "cluster_core/peer_protocol.h"
#include "common/address.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  dt::ReportHeader h;
  h.node_id = "edge-1";
  h.boot_id = 7;
  h.epoch = 3;
  h.sent_unix_ms = 1700000000000ull;
  // Sets 0..2: entries; sets 3 and 4 repeat sets 1 and 0 with adaptive factors.
  std::vector<std::vector<dt::ReportEntry>> sets(5);
  const char *addrs[] = {"198.18.0.1", "198.19.255.254", "2001:2::1", "2001:2:0:1::ff"};
  for (int i = 0; i < 4; i++) {
    dt::ReportEntry e{};
    dt::key_from_string(addrs[i], &e.key);
    e.hits = 1ull << (i * 9);
    sets[1].push_back(e);
    if (i < 2) sets[2].push_back(e);
  }
  sets[3] = sets[1];
  int n = 0;
  for (size_t i = 0; i < sets.size(); i++) {
    dt::ReportBody body;
    body.rules = {"default", "web-syn"};
    body.entries = sets[i];
    for (size_t j = 0; j < body.entries.size(); j++) body.entries[j].key.rule = static_cast<uint32_t>(j % 2);
    if (i == 1 || i == 3) body.tags = {{"user:42", 3}, {"api:x", 200}};
    if (i >= 3) body.factors = {{false, "web-syn", 250000}, {true, "user:", 1000000}, {true, "", 1}};
    for (const auto &m : dt::encode_report(h, 1, body)) {
      std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(n++), std::ios::binary) << m;
    }
  }
  // A resend request message (its own stream: seq 4).
  h.seq = 4;
  std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(n++), std::ios::binary)
      << dt::encode_resend_request(h, {{"edge-2", 99, {1, 2, 300}}, {"edge-3", 5, {1ull << 40}}});
  // A bans message (a set and a lift), and a report to one recipient (the owner scheme's).
  dt::BanNotice set, lift;
  std::string ban_err;
  dt::parse_ban_prefix("198.18.0.0/24", &set.prefix, &ban_err);
  dt::parse_ban_prefix("2001:2::/48", &lift.prefix, &ban_err);
  set.unix_ms = lift.unix_ms = 1699999999000ull;
  set.remaining_ms = 60000;
  set.reason = "scan";
  lift.remove = true;
  for (const auto &m : dt::encode_ban_messages(h, {set, lift}))
    std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(n++), std::ios::binary) << m;
  h.to = "edge-2";
  std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(n++), std::ios::binary)
      << dt::encode_report(h, 5, {{"default"}, sets[2], {}, {}, {}, {}, {}, {}})[0];
  h.to.clear();
  h.seq = 0;
  // A signed report (kFlagSigned, 64 bytes of signature at the end), with a fixed key.
  dt::SigningKey key;
  std::string err, signed_msg = dt::encode_report(h, 2, {{"default"}, {}, {{"api:x", 2}}, {}, {}, {}, {}, {}})[0];
  if (!dt::derive_signing_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", &key, &err)) {
    fprintf(stderr, "make_seeds: %s\n", err.c_str());
    return 1;
  }
  dt::sign_message(signed_msg, key);
  std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(n++), std::ios::binary) << signed_msg;
  return 0;
}
