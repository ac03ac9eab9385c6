// pcap_writer.cpp - pcapng and classic pcap blocks (host byte order: both formats say
// which in their magic number, and readers swap as needed), and the file they go to.
#include "capture/pcap_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dt {
namespace {

constexpr uint32_t kLinkEthernet = 1;  // LINKTYPE_ETHERNET
constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 1;
constexpr uint32_t kEnhancedPacket = 6;
constexpr uint16_t kOptEnd = 0, kOptComment = 1, kOptIfName = 2, kOptIfTsresol = 9;

void put32(std::string *s, uint32_t v) { s->append(reinterpret_cast<const char *>(&v), 4); }
void put16(std::string *s, uint16_t v) { s->append(reinterpret_cast<const char *>(&v), 2); }
void pad4(std::string *s) { s->append((4 - s->size() % 4) % 4, '\0'); }

// One pcapng option: code, length, value padded to 4 bytes.
void put_option(std::string *s, uint16_t code, const void *value, uint16_t len) {
  put16(s, code);
  put16(s, len);
  s->append(static_cast<const char *>(value), len);
  pad4(s);
}

// A pcapng block: type, total length, body (already a multiple of 4), total length again.
std::string block(uint32_t type, const std::string &body) {
  std::string b;
  const uint32_t total = static_cast<uint32_t>(12 + body.size());
  put32(&b, type);
  put32(&b, total);
  b += body;
  put32(&b, total);
  return b;
}

// Why an open capture file's descriptor must not be written ("" if it may be): captures
// hold payloads, so only a regular file of this user's, with no other name (a hard link
// would let whoever made it read the capture), becomes one.
std::string unfit_capture_file(int fd, const std::string &path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return "cannot read what " + path + " is: " + strerror(errno);
  if (!S_ISREG(st.st_mode))
    return path +
           " exists and is not a regular file (a FIFO, device or socket): captures are written to a new or "
           "regular file only; remove it or choose another name";
  if (st.st_uid != geteuid())
    return path + " exists and belongs to uid " + std::to_string(st.st_uid) +
           ", not to this user: remove it or choose another name";
  if (st.st_nlink != 1)
    return path + " exists with " + std::to_string(st.st_nlink) +
           " names (hard links): another name could read the capture; remove it or choose another name";
  return "";
}

// The capture file at path, opened for writing: created 0600 (captures hold payloads),
// never through a symbolic link at path (O_NOFOLLOW), never blocking on a FIFO; an
// existing file is reused only as unfit_capture_file allows, emptied and made 0600.
FILE *open_capture_file(const std::string &path, std::string *err) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) {
    *err = errno == ELOOP ? path +
                                " is a symbolic link: captures are never written through one; remove it or give "
                                "the path of a new file"
                          : "cannot create " + path + ": " + strerror(errno);
    return nullptr;
  }
  std::string why = unfit_capture_file(fd, path);
  if (why.empty() && (ftruncate(fd, 0) != 0 || fchmod(fd, 0600) != 0 || fcntl(fd, F_SETFL, 0) != 0))
    why = "cannot empty " + path + " or make it private (0600): " + strerror(errno);
  FILE *f = why.empty() ? fdopen(fd, "wb") : nullptr;
  if (!f && why.empty()) why = "cannot write " + path + ": " + strerror(errno);
  if (!f) {
    ::close(fd);
    *err = why;
  }
  return f;
}

}  // namespace

std::string pcapng_header(uint32_t snaplen, const std::string &iface) {
  std::string shb;
  put32(&shb, 0x1A2B3C4D);  // byte-order magic
  put16(&shb, 1);           // version 1.0
  put16(&shb, 0);
  put32(&shb, 0xFFFFFFFF);  // section length: not given
  put32(&shb, 0xFFFFFFFF);
  std::string idb;
  put16(&idb, kLinkEthernet);
  put16(&idb, 0);
  put32(&idb, snaplen);
  if (!iface.empty())
    put_option(&idb, kOptIfName, iface.data(), static_cast<uint16_t>(std::min<size_t>(iface.size(), 255)));
  const uint8_t nanoseconds = 9;  // timestamps in ns (10^-9 s)
  put_option(&idb, kOptIfTsresol, &nanoseconds, 1);
  put_option(&idb, kOptEnd, nullptr, 0);
  return block(kSectionHeader, shb) + block(kInterfaceDescription, idb);
}

std::string pcapng_packet(uint64_t unix_ns, const uint8_t *data, uint32_t cap_len, uint32_t orig_len,
                          const std::string &comment) {
  std::string epb;
  put32(&epb, 0);  // interface 0
  put32(&epb, static_cast<uint32_t>(unix_ns >> 32));
  put32(&epb, static_cast<uint32_t>(unix_ns));
  put32(&epb, cap_len);
  put32(&epb, orig_len);
  epb.append(reinterpret_cast<const char *>(data), cap_len);
  pad4(&epb);
  if (!comment.empty()) {
    put_option(&epb, kOptComment, comment.data(), static_cast<uint16_t>(std::min<size_t>(comment.size(), 65535)));
    put_option(&epb, kOptEnd, nullptr, 0);
  }
  return block(kEnhancedPacket, epb);
}

std::string pcap_header(uint32_t snaplen) {
  std::string h;
  put32(&h, 0xA1B23C4D);  // nanosecond-resolution pcap
  put16(&h, 2);
  put16(&h, 4);
  put32(&h, 0);  // thiszone
  put32(&h, 0);  // sigfigs
  put32(&h, snaplen);
  put32(&h, kLinkEthernet);
  return h;
}

std::string pcap_packet(uint64_t unix_ns, const uint8_t *data, uint32_t cap_len, uint32_t orig_len) {
  std::string p;
  put32(&p, static_cast<uint32_t>(unix_ns / 1'000'000'000ull));
  put32(&p, static_cast<uint32_t>(unix_ns % 1'000'000'000ull));
  put32(&p, cap_len);
  put32(&p, orig_len);
  p.append(reinterpret_cast<const char *>(data), cap_len);
  return p;
}

PcapWriter::~PcapWriter() {
  std::string ignored;
  close(&ignored);
}

bool PcapWriter::open(const std::string &path, PcapFormat format, uint32_t snaplen, const std::string &iface,
                      std::string *err) {
  is_stdout_ = path == "-";
  file_ = is_stdout_ ? stdout : open_capture_file(path, err);
  if (!file_) return false;
  path_ = path;
  format_ = format;
  return put(format == PcapFormat::Pcapng ? pcapng_header(snaplen, iface) : pcap_header(snaplen), err);
}

bool PcapWriter::write(uint64_t unix_ns, const uint8_t *data, uint32_t cap_len, uint32_t orig_len,
                       const std::string &comment, std::string *err) {
  return put(format_ == PcapFormat::Pcapng ? pcapng_packet(unix_ns, data, cap_len, orig_len, comment)
                                           : pcap_packet(unix_ns, data, cap_len, orig_len),
             err);
}

bool PcapWriter::put(const std::string &bytes, std::string *err) {
  if (!file_) return *err = "the capture file is not open", false;
  if (fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() || fflush(file_) != 0)
    return *err = "cannot write " + (is_stdout_ ? std::string("to standard output") : path_) + ": " + strerror(errno),
           false;
  return true;
}

bool PcapWriter::close(std::string *err) {
  if (!file_) return true;
  const bool ok = is_stdout_ ? fflush(file_) == 0 : fclose(file_) == 0;
  file_ = nullptr;
  if (!ok) *err = "cannot close " + path_ + ": " + strerror(errno);
  return ok;
}

}  // namespace dt
