// ban_command.cpp - the query socket's BAN and UNBAN lines (ban_command.h).
#include "bans/ban_command.h"

namespace dt {
namespace {

// The next space-separated word of `rest` (consumed, with the spaces after it).
std::string_view next_word(std::string_view *rest) {
  const size_t end = std::min(rest->find(' '), rest->size());
  std::string_view word = rest->substr(0, end);
  rest->remove_prefix(end);
  while (!rest->empty() && rest->front() == ' ') rest->remove_prefix(1);
  return word;
}

}  // namespace

bool is_ban_command(std::string_view line) { return line.starts_with("BAN ") || line.starts_with("UNBAN "); }

bool parse_ban_line(std::string_view line, BanCommand *out, std::string *err) {
  std::string_view rest = line;
  const std::string_view verb = next_word(&rest);
  *out = BanCommand{};
  out->unban = verb == "UNBAN";
  if (verb != "BAN" && verb != "UNBAN") return *err = "not a ban command", false;
  const std::string_view prefix = next_word(&rest);
  if (prefix.empty())
    return *err = out->unban ? "usage: UNBAN <addr|prefix>" : "usage: BAN <addr|prefix> <duration> [<reason>]", false;
  if (!parse_ban_prefix(std::string(prefix), &out->prefix, err))
    return *err = "bad prefix '" + std::string(prefix) + "'", false;
  if (out->unban) {
    if (!rest.empty()) return *err = "usage: UNBAN <addr|prefix>", false;
    return true;
  }
  const std::string_view duration = next_word(&rest);
  if (duration.empty()) return *err = "usage: BAN <addr|prefix> <duration> [<reason>]", false;
  std::string why;
  if (!parse_ban_duration(std::string(duration), &out->for_ns, &why))
    return *err = "bad duration '" + std::string(duration) + "': 1s to 30d, e.g. 10m", false;
  out->reason = std::string(rest);
  if (!valid_ban_text(out->reason, kMaxBanReason)) return *err = "reason too long (at most 95 bytes)", false;
  return true;
}

std::string run_ban_line(BanStore &store, std::string_view line, uint32_t uid, uint64_t now_ns) {
  BanCommand cmd;
  std::string err;
  if (!parse_ban_line(line, &cmd, &err)) return "ERR " + err + "\n";
  if (cmd.unban) {
    bool found = false;
    if (!store.remove(cmd.prefix, &found, &err)) return "ERR " + err + "\n";
    return found ? "OK\n" : "NO\n";
  }
  Ban b;
  b.prefix = cmd.prefix;
  b.expires_ns = now_ns + cmd.for_ns;
  b.reason = cmd.reason;
  b.origin = "query";
  b.who = "uid " + std::to_string(uid) + " (query socket)";
  if (!store.set(b, &err)) return "ERR " + err + "\n";
  return "OK\n";
}

}  // namespace dt
