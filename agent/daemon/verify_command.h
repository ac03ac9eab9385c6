// verify_command.h - the query socket's VERIFY command (docs/rules.md "SYN cookies"): an
// application that knows a client is real (it logged in, it paid) makes its address a
// verified source, so that its SYNs skip the prefix budgets of syn_cookies rules without
// a cookie. Admin peers only: the query server checks the peer (query_server.h) and
// answers anyone else "ERR not allowed".
//
//   client: VERIFY <addr> [<ttl-seconds>]\n
//   server: "OK\n"          verified from now for ttl-seconds (default: --verified-ttl)
//           "ERR <why>\n"   not one address (no prefix), a ttl of 0 or longer than
//                           --verified-ttl, the map refused, the agent not ready yet
// Such a source is verified on this host only: it is not told to the peers (only the
// sources a cookie verified are).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/no_copy.h"
#include "dthrottle/common.h"

namespace dt {

// Parses VERIFY's argument ("<addr> [<ttl-seconds>]"): the verified map's key and the TTL,
// at most max_ttl_ns. False with *err (the text after "ERR ").
bool parse_verify_arg(std::string_view arg, uint64_t max_ttl_ns, dt_key *key, uint64_t *ttl_ns, std::string *err);

// The daemon's VERIFY, for the query thread: answers "ERR not ready" until the verified map
// is open (set_map: a descriptor of its own, closed with this object, which outlives the
// query server).
class VerifyCommand : NoCopy {
 public:
  VerifyCommand() = default;
  ~VerifyCommand();
  void set_map(int verified_fd, uint64_t max_ttl_ns);
  // The answer to "VERIFY <arg>", '\n' included.
  std::string run(std::string_view arg) const;

 private:
  std::atomic<int> fd_{-1};
  std::atomic<uint64_t> max_ttl_ns_{0};
};

}  // namespace dt
