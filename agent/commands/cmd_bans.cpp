// cmd_bans.cpp - `agent ban`, `agent unban`, `agent bans`: the bans in the pinned maps
// (bans/ban_store.h), no query socket needed (docs/bans.md).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bans/ban_render.h"
#include "bans/ban_store.h"
#include "cli/cli.h"
#include "commands/commands.h"
#include "common/clock.h"
#include "common/program_name.h"
#include "dataplane/dataplane.h"

namespace dt {
namespace {

// "uid 0 (agent ban)", "uid 0 (agent ban, sudo by alice)": who set a ban.
std::string who_am_i() {
  std::string who = "uid " + std::to_string(getuid()) + " (agent ban";
  if (const char *sudo = getenv("SUDO_USER"); sudo && *sudo) who += std::string(", sudo by ") + sudo;
  return (who + ")").substr(0, kMaxBanWho);
}

// Without a running agent the ban holds in the kernel, but nobody announces or sweeps it.
void warn_if_no_agent(const char *command, const std::string &pin_dir) {
  if (!agent_running(pin_dir))
    fprintf(stderr,
            "%s: warning: no agent is running with the pins in %s: the kernel enforces this at once, but "
            "peers learn it only once the agent runs again\n",
            command_name(command).c_str(), pin_dir.c_str());
}

// "COMMAND: ERR" on stderr; the exit status 1.
int failed(const char *command, const std::string &err) {
  fprintf(stderr, "%s: %s\n", command_name(command).c_str(), err.c_str());
  return 1;
}

// The command's options by `parse`, then `body` with them and the bans pinned where they say.
int with_store(int argc, char **argv, const char *command, int (*parse)(int, char **, BanOptions *),
               int (*body)(const BanOptions &, BanStore *)) {
  BanOptions opt;
  if (int code = parse(argc, argv, &opt); code >= 0) return code;
  std::string err;
  auto store = BanStore::open(opt.pin_dir, &err);
  return store ? body(opt, store.get()) : failed(command, err);
}

int ban(const BanOptions &opt, BanStore *store) {
  Ban b;
  std::string err;
  parse_ban_prefix(opt.target, &b.prefix, &err);  // checked by the parser
  b.expires_ns = mono_now_ns() + opt.for_ns;
  b.reason = opt.reason;
  b.origin = "local";
  b.who = who_am_i();
  const bool again = store->find(b.prefix).has_value();
  if (!store->set(b, &err)) return failed("ban", err);
  printf("%s %s for %s%s%s\n", again ? "updated the ban of" : "banned", ban_prefix_text(b.prefix).c_str(),
         format_remaining(opt.for_ns).c_str(), opt.reason.empty() ? "" : ": ", opt.reason.c_str());
  warn_if_no_agent("ban", opt.pin_dir);
  return 0;
}

int unban(const BanOptions &opt, BanStore *store) {
  BanPrefix p;
  std::string err;
  parse_ban_prefix(opt.target, &p, &err);
  bool found = false;
  if (!store->remove(p, &found, &err)) return failed("unban", err);
  if (!found) {
    fprintf(stderr, "%s: %s is not banned (exactly that prefix: see %s)\n", command_name("unban").c_str(),
            ban_prefix_text(p).c_str(), command_name("bans").c_str());
    return 1;
  }
  printf("lifted the ban of %s\n", ban_prefix_text(p).c_str());
  warn_if_no_agent("unban", opt.pin_dir);
  return 0;
}

int list_bans(const BanOptions &opt, BanStore *store) {
  std::vector<Ban> bans;
  std::string err;
  if (!store->list(&bans, &err)) return failed("bans", err);
  const uint64_t now = mono_now_ns();
  const std::string out = opt.json ? render_bans_json(bans, now) : render_bans_text(bans, now);
  fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

int cmd_ban(int argc, char **argv) { return with_store(argc, argv, "ban", parse_ban_command, ban); }
int cmd_unban(int argc, char **argv) { return with_store(argc, argv, "unban", parse_unban_command, unban); }
int cmd_bans(int argc, char **argv) { return with_store(argc, argv, "bans", parse_bans_command, list_bans); }

}  // namespace dt
