// listen_watch.cpp - see listen_watch.h. One listener dump per family per poll, with
// only TCP_LISTEN requested so the kernel never walks the established-socket table;
// ports are matched in userspace so any number of ports costs the same two dumps.
#include "adaptive/listen_watch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace dt {
namespace {

constexpr size_t kRecvBuf = 32 * 1024;  // the kernel sizes dump parts to at most 32 KiB
constexpr int kMaxDumpReads = 1 << 14;  // bounds a dump: far beyond any real listener count
constexpr size_t kMaxNetstatBytes = 1 << 20;
constexpr const char *kNetstatPath = "/proc/thread-self/net/netstat";

const char *family_name(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

std::string errno_sentence(const std::string &what, int err) { return what + ": " + std::strerror(err); }

// Splits on spaces; the netstat lines have no other separators.
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') i++;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') j++;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool parse_u64(std::string_view s, uint64_t *out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Sends dump request number `seq` for the family's TCP listeners (TCP_LISTEN only).
bool send_listener_dump(int fd, int family, uint32_t seq, const std::string &what, std::string *err) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.nlh.nlmsg_seq = seq;
  msg.req.sdiag_family = static_cast<uint8_t>(family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = 1u << TCP_LISTEN;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = sendto(fd, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr *>(&kernel), sizeof(kernel));
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(sizeof(msg))) {
    *err = errno_sentence("cannot send " + what + " request", sent < 0 ? errno : EIO);
    return false;
  }
  return true;
}

// Folds one listener into the state of its port, when it is a port we watch.
void fold_listener(const inet_diag_msg &m, std::vector<ListenQueueWatch::PortState> *states) {
  const uint16_t port = ntohs(m.id.idiag_sport);
  const uint32_t queued = m.idiag_rqueue, backlog = m.idiag_wqueue;
  const bool full = queued > 0 && queued >= backlog;
  for (ListenQueueWatch::PortState &s : *states) {
    if (s.port != port) continue;
    // Keep the fullest listener: a full one first, then the longest queue.
    if (s.listeners == 0 || (full && !s.full) || (full == s.full && queued > s.queued)) {
      s.queued = queued;
      s.backlog = backlog;
      s.full = full;
    }
    s.listeners++;
  }
}

enum class DumpPart { More, Done, Failed };

// One netlink message of our dump: its end, an error (Failed with *err), or a listener.
DumpPart take_dump_message(const nlmsghdr *h, int family, const std::string &what,
                           std::vector<ListenQueueWatch::PortState> *states, std::string *err) {
  if (h->nlmsg_type == NLMSG_DONE) {
    // A dump that failed midway ends with NLMSG_DONE carrying -errno.
    int status = 0;
    if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) std::memcpy(&status, NLMSG_DATA(h), sizeof(int));
    if (status < 0) {
      *err = errno_sentence("the kernel aborted " + what, -status);
      return DumpPart::Failed;
    }
    return DumpPart::Done;
  }
  if (h->nlmsg_type == NLMSG_ERROR) {
    int code = EPROTO;
    if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(nlmsgerr))) code = -static_cast<const nlmsgerr *>(NLMSG_DATA(h))->error;
    // No IPv6 in this kernel: there are no IPv6 listeners to report.
    if (family == AF_INET6 && code == ENOENT) return DumpPart::Done;
    *err = errno_sentence("the kernel refused " + what, code);
    return DumpPart::Failed;
  }
  if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return DumpPart::More;
  if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) {
    *err = what + " holds a message too short for inet_diag_msg";
    return DumpPart::Failed;
  }
  fold_listener(*static_cast<const inet_diag_msg *>(NLMSG_DATA(h)), states);
  return DumpPart::More;
}

}  // namespace

bool parse_listen_counters(std::string_view netstat, ListenCounters *out, std::string *err) {
  constexpr std::string_view kPrefix = "TcpExt:";
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < netstat.size();) {
    size_t nl = netstat.find('\n', pos);
    if (nl == std::string_view::npos) nl = netstat.size();
    std::string_view line = netstat.substr(pos, nl - pos);
    if (line.starts_with(kPrefix)) lines.push_back(line.substr(kPrefix.size()));
    pos = nl + 1;
  }
  if (lines.size() != 2) {
    *err = "netstat has " + std::to_string(lines.size()) + " TcpExt lines, expected a header and a value line";
    return false;
  }
  std::vector<std::string_view> names = words(lines[0]), values = words(lines[1]);
  if (names.size() != values.size()) {
    *err = "netstat TcpExt has " + std::to_string(names.size()) + " names but " + std::to_string(values.size()) +
           " values";
    return false;
  }
  bool seen_overflows = false, seen_drops = false;
  for (size_t i = 0; i < names.size(); i++) {
    uint64_t *dst = nullptr;
    if (names[i] == "ListenOverflows") {
      dst = &out->overflows;
      seen_overflows = true;
    } else if (names[i] == "ListenDrops") {
      dst = &out->drops;
      seen_drops = true;
    } else {
      continue;
    }
    if (!parse_u64(values[i], dst)) {
      *err = "netstat TcpExt " + std::string(names[i]) + " is not a number: '" + std::string(values[i]) + "'";
      return false;
    }
  }
  if (!seen_overflows || !seen_drops) {
    *err = std::string("netstat TcpExt has no ") + (seen_overflows ? "ListenDrops" : "ListenOverflows") + " counter";
    return false;
  }
  return true;
}

ListenQueueWatch::ListenQueueWatch(std::vector<uint16_t> ports) : ports_(std::move(ports)), buf_(kRecvBuf) {
  // Opened now so they belong to the constructing thread's network namespace; a
  // failure here is reported by the first poll(), which tries again.
  std::string ignored;
  open_files(&ignored);
}

ListenQueueWatch::~ListenQueueWatch() { close_files(); }

void ListenQueueWatch::close_files() {
  if (nl_fd_ >= 0) close(nl_fd_);
  if (netstat_fd_ >= 0) close(netstat_fd_);
  nl_fd_ = netstat_fd_ = -1;
}

bool ListenQueueWatch::open_files(std::string *err) {
  if (nl_fd_ < 0) {
    nl_fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl_fd_ < 0) {
      *err = errno_sentence("cannot open a NETLINK_SOCK_DIAG socket", errno);
      return false;
    }
    // A dump is answered within recvmsg, so this never fires in practice; it only
    // guarantees the agent's period loop cannot hang on a lost reply.
    timeval tv{.tv_sec = 1, .tv_usec = 0};
    setsockopt(nl_fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  if (netstat_fd_ < 0) {
    netstat_fd_ = open(kNetstatPath, O_RDONLY | O_CLOEXEC);
    if (netstat_fd_ < 0) {
      *err = errno_sentence(std::string("cannot open ") + kNetstatPath, errno);
      return false;
    }
  }
  return true;
}

bool ListenQueueWatch::read_counters(ListenCounters *out, std::string *err) {
  std::string text;
  char chunk[8192];
  for (;;) {
    ssize_t n = pread(netstat_fd_, chunk, sizeof(chunk), static_cast<off_t>(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno_sentence(std::string("cannot read ") + kNetstatPath, errno);
      return false;
    }
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxNetstatBytes) {
      *err = std::string(kNetstatPath) + " is larger than 1 MiB";
      return false;
    }
  }
  return parse_listen_counters(text, out, err);
}

// Asks for the family's TCP listeners and folds each one into the state of its port.
bool ListenQueueWatch::dump_family(int family, std::vector<PortState> *states, std::string *err) {
  const std::string what = std::string("the ") + family_name(family) + " listener dump";
  if (!send_listener_dump(nl_fd_, family, ++seq_, what, err)) return false;
  for (int reads = 0; reads < kMaxDumpReads; reads++) {
    iovec iov{buf_.data(), buf_.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    ssize_t n = recvmsg(nl_fd_, &mh, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno_sentence("cannot receive " + what, errno);
      return false;
    }
    if (mh.msg_flags & MSG_TRUNC) {
      *err = what + " came in a message larger than " + std::to_string(buf_.size()) + " bytes";
      return false;
    }
    int len = static_cast<int>(n);
    for (auto *h = reinterpret_cast<nlmsghdr *>(buf_.data()); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_seq != seq_) continue;  // left over from an earlier, failed dump
      const DumpPart part = take_dump_message(h, family, what, states, err);
      if (part != DumpPart::More) return part == DumpPart::Done;
    }
  }
  *err = what + " did not end after " + std::to_string(kMaxDumpReads) + " reads";
  return false;
}

bool ListenQueueWatch::poll(std::vector<PortState> *out, std::string *err) {
  if (!open_files(err)) return false;
  std::vector<PortState> states(ports_.size());
  for (size_t i = 0; i < ports_.size(); i++) states[i].port = ports_[i];

  ListenCounters now;
  if (!read_counters(&now, err) || !dump_family(AF_INET, &states, err) || !dump_family(AF_INET6, &states, err)) {
    // Start over with fresh descriptors: a half-read dump must not linger.
    close_files();
    return false;
  }

  auto increase = [](uint64_t now, uint64_t before) { return now > before ? now - before : 0; };
  if (have_counters_) {
    const uint64_t overflows = increase(now.overflows, last_.overflows);
    const uint64_t drops = increase(now.drops, last_.drops);
    for (PortState &s : states) {
      if (s.queued == 0) continue;  // the heuristic: blame only ports with a backlog
      s.overflows = overflows;
      s.drops = drops;
    }
  }
  last_ = now;
  have_counters_ = true;
  *out = std::move(states);
  return true;
}

}  // namespace dt
