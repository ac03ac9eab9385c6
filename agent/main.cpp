// main.cpp - subcommand dispatch for build/agent (installed as dthrottle-agent).
#include <cstdio>
#include <cstring>

#include "commands/commands.h"
#include "common/program_name.h"

namespace {

// The subcommands, by the word after the program name; anything else runs the agent.
struct Subcommand {
  const char *name;
  int (*run)(int argc, char **argv);
};

constexpr Subcommand kSubcommands[] = {{"stats", dt::cmd_stats},     {"top", dt::cmd_top},
                                       {"check", dt::cmd_check},     {"hub", dt::cmd_hub},
                                       {"explain", dt::cmd_explain}, {"reload", dt::cmd_reload},
                                       {"keygen", dt::cmd_keygen},   {"crowdsec", dt::cmd_crowdsec},
                                       {"ban", dt::cmd_ban},         {"unban", dt::cmd_unban},
                                       {"bans", dt::cmd_bans},       {"capture", dt::cmd_capture},
                                       {"suggest", dt::cmd_suggest}, {"fingerprint", dt::cmd_fingerprint}};

}  // namespace

int main(int argc, char **argv) {
  dt::set_program_name(argc >= 1 ? argv[0] : nullptr);  // messages name the command as typed
  for (const Subcommand &s : kSubcommands)
    if (argc >= 2 && strcmp(argv[1], s.name) == 0) return s.run(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("%s (dthrottle) %s\n", dt::program_name().c_str(), DTHROTTLE_VERSION);
    return 0;
  }
  return dt::cmd_run(argc, argv);
}
