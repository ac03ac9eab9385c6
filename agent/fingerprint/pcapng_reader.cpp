// pcapng_reader.cpp - Enhanced Packet Blocks out of a pcapng file.
#include "fingerprint/pcapng_reader.h"

#include <cstring>

namespace dt {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A, kEnhancedPacket = 6, kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kOptEnd = 0, kOptComment = 1;

uint32_t get32(const std::string &s, size_t at) {
  uint32_t v;
  memcpy(&v, s.data() + at, 4);
  return v;
}
uint16_t get16(const std::string &s, size_t at) {
  uint16_t v;
  memcpy(&v, s.data() + at, 2);
  return v;
}

// The first comment among the options in [at, end).
std::string first_comment(const std::string &s, size_t at, size_t end) {
  while (at + 4 <= end) {
    const uint16_t code = get16(s, at), len = get16(s, at + 2);
    if (code == kOptEnd || at + 4 + len > end) break;
    if (code == kOptComment) return s.substr(at + 4, len);
    at += 4 + ((len + 3u) & ~3u);
  }
  return "";
}

// One EPB's body [at, end): interface, timestamp (8), captured and original length, data, options.
bool take_packet(const std::string &s, size_t at, size_t end, CapturedPacket *p) {
  if (end - at < 20) return false;
  const uint32_t cap_len = get32(s, at + 12);
  p->orig_len = get32(s, at + 16);
  if (cap_len > end - at - 20) return false;
  p->data = s.substr(at + 20, cap_len);
  p->comment = first_comment(s, at + 20 + ((cap_len + 3u) & ~3u), end);
  return true;
}

}  // namespace

bool read_pcapng(const std::string &file, size_t max_packets, std::vector<CapturedPacket> *out, bool *truncated,
                 std::string *err) {
  *truncated = false;
  if (file.size() < 12 || get32(file, 0) != kSectionHeader || get32(file, 8) != kByteOrderMagic)
    return *err = "not a pcapng file written on this host (agent capture's format; classic pcap carries no verdicts)",
           false;
  size_t at = 0;
  while (at + 12 <= file.size()) {
    const uint32_t type = get32(file, at), total = get32(file, at + 4);
    if (total < 12 || total % 4 || total > file.size() - at)
      return *err = "a block at byte " + std::to_string(at) + " has a length of " + std::to_string(total) +
                    " that the file cannot hold (cut short?)",
             false;
    if (type == kEnhancedPacket) {
      if (out->size() >= max_packets) return *truncated = true, true;
      CapturedPacket p;
      if (!take_packet(file, at + 8, at + total - 4, &p))
        return *err = "the packet block at byte " + std::to_string(at) + " is malformed", false;
      out->push_back(std::move(p));
    }
    at += total;
  }
  return true;
}

std::string comment_value(const std::string &comment, const std::string &key) {
  const std::string want = key + "=";
  size_t at = 0;
  while (at < comment.size()) {
    size_t end = comment.find(' ', at);
    if (end == std::string::npos) end = comment.size();
    if (comment.compare(at, want.size(), want) == 0) return comment.substr(at + want.size(), end - at - want.size());
    at = end + 1;
  }
  return "";
}

}  // namespace dt
