// pcap_writer.h - the file `agent capture` writes: pcapng (the default: each packet with a
// comment, the verdict and the rule) or classic pcap (--format pcap: no comments), both
// readable by tcpdump -r and Wireshark. Written by hand: Debian's libpcap writes classic
// pcap only, and either format is a few fixed blocks (pcapng: draft-ietf-opsawg-pcapng).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/no_copy.h"

namespace dt {

enum class PcapFormat { Pcapng, Pcap };

// One capture file: its header on open(), then one block per packet, each flushed to the
// kernel as it is written, so that a capture killed at any point leaves a file that reads
// up to its last whole packet.
class PcapWriter : NoCopy {
 public:
  PcapWriter() = default;
  ~PcapWriter();

  // Creates (or truncates) `path` ("-": standard output) and writes the file header for
  // Ethernet frames of at most `snaplen` bytes; `iface` names the interface (pcapng).
  // False with a sentence in *err.
  bool open(const std::string &path, PcapFormat format, uint32_t snaplen, const std::string &iface, std::string *err);
  // One packet: `cap_len` bytes of a frame of `orig_len`, at `unix_ns` (nanoseconds since
  // the epoch), with `comment` (pcapng only; "" for none). False with a sentence in *err.
  bool write(uint64_t unix_ns, const uint8_t *data, uint32_t cap_len, uint32_t orig_len, const std::string &comment,
             std::string *err);
  // Flushes and closes (the destructor does too). False with a sentence in *err.
  bool close(std::string *err);

 private:
  bool put(const std::string &bytes, std::string *err);

  FILE *file_ = nullptr;
  bool is_stdout_ = false;
  PcapFormat format_ = PcapFormat::Pcapng;
  std::string path_;
};

// The blocks themselves, for the writer and its tests.
std::string pcapng_header(uint32_t snaplen, const std::string &iface);
std::string pcapng_packet(uint64_t unix_ns, const uint8_t *data, uint32_t cap_len, uint32_t orig_len,
                          const std::string &comment);
std::string pcap_header(uint32_t snaplen);
std::string pcap_packet(uint64_t unix_ns, const uint8_t *data, uint32_t cap_len, uint32_t orig_len);

}  // namespace dt
