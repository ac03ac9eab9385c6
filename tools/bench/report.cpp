// report.cpp - Part 3 (`bench report`): the peer report codec.
#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/measure.h"
#include "bench/parts.h"
#include "cluster_core/peer_protocol.h"

namespace dt::bench {

// Part 3: the peer report codec. Bytes per entry, and how many reports of 100,000
// distinct sources per period one core can encode and decode (applying them is
// apply_debits above).
void report_codec_part() {
  using clock = std::chrono::steady_clock;
  printf("\nPart 3: peer reports (encode + decode, one thread)\n");
  printf("  %-28s | %9s %9s %14s | %12s %12s\n", "report", "messages", "bytes", "bytes/entry", "encode/s", "decode/s");
  for (bool v6 : {false, true})
    for (uint64_t hits : {1ull, 100ull, 1000ull}) {
      dt::ReportBody body;
      body.rules = {"default"};
      for (uint32_t i = 0; i < 100'000; i++) {
        dt::ReportEntry e{};
        if (v6) {  // 2001:2::N
          e.key.addr[0] = 0x20, e.key.addr[1] = 0x01, e.key.addr[3] = 0x02;
          const uint32_t low = htonl(i + 1);
          memcpy(&e.key.addr[12], &low, 4);
        } else {  // 198.18.0.0 + N, IPv4-mapped
          e.key.addr[10] = e.key.addr[11] = 0xff, e.key.addr[12] = 198;
          e.key.addr[13] = static_cast<uint8_t>(18 + (i >> 16));
          e.key.addr[14] = static_cast<uint8_t>(i >> 8), e.key.addr[15] = static_cast<uint8_t>(i);
        }
        e.hits = hits;
        body.entries.push_back(e);
      }
      dt::ReportHeader h;
      h.node_id = "edge-1";
      const auto empty = dt::encode_report(h, 1, dt::ReportBody{});
      std::vector<std::string> msgs;
      const int rounds = 20;
      auto t0 = clock::now();
      for (int r = 0; r < rounds; r++) msgs = dt::encode_report(h, 1, body);
      const double enc = std::chrono::duration<double>(clock::now() - t0).count() / rounds;
      size_t bytes = 0, decoded = 0;
      for (const auto &m : msgs) bytes += m.size();
      t0 = clock::now();
      for (int r = 0; r < rounds; r++)
        for (const auto &m : msgs) {
          dt::ReportHeader hh;
          dt::ReportBody bb;
          if (dt::decode_report(m.data(), m.size(), &hh, &bb) != dt::DecodeError::None) die("decode failed");
          decoded += bb.entries.size();
        }
      const double dec = std::chrono::duration<double>(clock::now() - t0).count() / rounds;
      if (decoded != body.entries.size() * rounds)
        die("decoded %zu entries, expected %zu", decoded / rounds, body.entries.size());
      char label[64];
      snprintf(label, sizeof label, "100,000 IPv%d, %llu hits each", v6 ? 6 : 4, static_cast<unsigned long long>(hits));
      const double per_entry = static_cast<double>(bytes - msgs.size() * empty[0].size()) / body.entries.size();
      printf("  %-28s | %9zu %9zu %14.2f | %12.0f %12.0f\n", label, msgs.size(), bytes, per_entry, 1.0 / enc,
             1.0 / dec);
    }
  printf("  (bytes/entry leaves out each message's fixed header; /s = whole 100,000-source reports per second)\n");
}

}  // namespace dt::bench
