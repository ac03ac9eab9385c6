// main.cpp - subcommand dispatch for build/agent (installed as dthrottle-agent).
#include <cstdio>
#include <cstring>

#include "commands/commands.h"
#include "common/program_name.h"

int main(int argc, char **argv) {
  dt::set_program_name(argc >= 1 ? argv[0] : nullptr);  // messages name the command as typed
  if (argc >= 2 && strcmp(argv[1], "stats") == 0) return dt::cmd_stats(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "top") == 0) return dt::cmd_top(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "check") == 0) return dt::cmd_check(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "hub") == 0) return dt::cmd_hub(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "explain") == 0) return dt::cmd_explain(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "reload") == 0) return dt::cmd_reload(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "keygen") == 0) return dt::cmd_keygen(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "crowdsec") == 0) return dt::cmd_crowdsec(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "ban") == 0) return dt::cmd_ban(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "unban") == 0) return dt::cmd_unban(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "bans") == 0) return dt::cmd_bans(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "capture") == 0) return dt::cmd_capture(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("%s (dthrottle) %s\n", dt::program_name().c_str(), DTHROTTLE_VERSION);
    return 0;
  }
  return dt::cmd_run(argc, argv);
}
