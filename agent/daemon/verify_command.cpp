// verify_command.cpp - the query socket's VERIFY command (verify_command.h).
#include "daemon/verify_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/address.h"
#include "common/clock.h"
#include "common/parse_values.h"
#include "dataplane/verified_maps.h"

namespace dt {

bool parse_verify_arg(std::string_view arg, uint64_t max_ttl_ns, dt_key *key, uint64_t *ttl_ns, std::string *err) {
  const size_t space = arg.find(' ');
  const std::string addr(arg.substr(0, space));
  if (!key_from_string(addr, key))
    return *err = "not an address: '" + addr + "' (VERIFY <addr> [<ttl-seconds>], one IPv4 or IPv6 address)", false;
  key->rule = addr_is_v4(key->addr) ? DT_VERIFIED_V4 : DT_VERIFIED_V6;
  *ttl_ns = max_ttl_ns;
  if (space == std::string_view::npos) return true;
  const std::string ttl(arg.substr(space + 1));
  const uint64_t max_s = max_ttl_ns / 1'000'000'000ull;
  uint64_t s = 0;
  std::string why;
  if (!parse_count(ttl, 1, max_s, &s, &why))
    return *err = "bad ttl '" + ttl + "': whole seconds from 1 to " + std::to_string(max_s) + " (--verified-ttl)",
           false;
  *ttl_ns = s * 1'000'000'000ull;
  return true;
}

VerifyCommand::~VerifyCommand() {
  if (const int fd = fd_.exchange(-1); fd >= 0) close(fd);
}

void VerifyCommand::set_map(int verified_fd, uint64_t max_ttl_ns) {
  max_ttl_ns_ = max_ttl_ns;
  const int fd = fcntl(verified_fd, F_DUPFD_CLOEXEC, 0);
  if (fd >= 0) fd_ = fd;
}

std::string VerifyCommand::run(std::string_view arg) const {
  const int fd = fd_.load();
  if (fd < 0) return "ERR not ready: the verified sources' map is not open yet\n";
  dt_key key;
  uint64_t ttl_ns = 0;
  std::string err;
  if (!parse_verify_arg(arg, max_ttl_ns_.load(), &key, &ttl_ns, &err)) return "ERR " + err + "\n";
  if (write_verified(fd, key, ttl_ns, mono_now_ns()) == VerifiedWriteResult::Failed)
    return std::string("ERR cannot write the verified sources' map: ") + strerror(errno) + "\n";
  return "OK\n";
}

}  // namespace dt
