// pcapng_reader.h - reading back what `agent capture` writes (capture/pcap_writer.h): the
// Enhanced Packet Blocks of a pcapng file, each packet's bytes, its length on the wire
// and its comment ("verdict=dropped rule=NAME ..."). Pure: bytes in, packets out. Only
// this host's byte order (the writer's); bounded by the size given and max_packets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct CapturedPacket {
  std::string data;       // the bytes captured (up to the snaplen)
  uint32_t orig_len = 0;  // the frame's length
  std::string comment;    // the first comment option ("" for none)
};

// Every packet of a pcapng `file` (at most max_packets; *truncated set when there were
// more). False with a sentence in *err for a file that is not pcapng in this byte order,
// or a block that lies about its length (the packets before it are kept in *out).
bool read_pcapng(const std::string &file, size_t max_packets, std::vector<CapturedPacket> *out, bool *truncated,
                 std::string *err);

// The value of `key` in a capture comment ("verdict" of "verdict=dropped rule=x"), "" if absent.
std::string comment_value(const std::string &comment, const std::string &key);

}  // namespace dt
