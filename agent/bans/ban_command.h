// ban_command.h - the query socket's ban commands (docs/bans.md "Query socket"), for
// applications (a login service banning a credential stuffer). Only for the admin uids
// of the query socket (query/): the caller checks the peer's uid, then runs the line here.
//
//   client: BAN <addr|prefix> <duration> [<reason...>]\n
//   server: "OK\n"          banned (or the ban of that prefix updated)
//           "ERR <why>\n"   a bad prefix, duration (1s..30d) or reason; the maps full
//   client: UNBAN <addr|prefix>\n
//   server: "OK\n"          lifted
//           "NO\n"          that prefix is not banned
//           "ERR <why>\n"
// The ban's origin is "query", its who "uid N (query socket)"; in a cluster it reaches
// the peers like any ban set here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bans/ban_store.h"

namespace dt {

struct BanCommand {
  bool unban = false;
  BanPrefix prefix;
  uint64_t for_ns = 0;  // BAN only
  std::string reason;   // BAN only
};

// Whether the line is a ban command ("BAN " or "UNBAN "): a tag may not start so.
bool is_ban_command(std::string_view line);
// Parses a ban command line (without its '\n'). False with *err (the text after "ERR ").
bool parse_ban_line(std::string_view line, BanCommand *out, std::string *err);
// Parses and runs `line` on `store` for `uid`: the answer, '\n' included.
std::string run_ban_line(BanStore &store, std::string_view line, uint32_t uid, uint64_t now_ns);

}  // namespace dt
