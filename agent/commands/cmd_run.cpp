// cmd_run.cpp - `agent --iface ...`: the daemon (daemon/daemon.h) from a command line,
// its configuration checked first the way `agent check` checks it.
#include <cstdio>

#include "cli/cli.h"
#include "commands/commands.h"
#include "common/log.h"
#include "common/program_name.h"
#include "daemon/daemon.h"
#include "daemon/run_config.h"

namespace dt {

int cmd_run(int argc, char **argv) {
  RunOptions opt;
  if (int code = parse_run_command(argc, argv, &opt, ""); code >= 0) return code;
  set_log_level(opt.log_level);
  route_libbpf_log();

  RunConfig config;
  std::string err;
  if (!load_run_config(opt, &config, &err)) {
    fprintf(stderr, "%s: %s\n", program_name().c_str(), err.c_str());
    return 2;
  }
  Daemon daemon(std::move(config));
  return daemon.run();
}

}  // namespace dt
