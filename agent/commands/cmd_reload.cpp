// cmd_reload.cpp - `agent reload`: make the running agent re-read its --rules file and
// its peers (SIGHUP) and report whether the new rules and peers are in force.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "cli/cli.h"
#include "commands/commands.h"
#include "common/files.h"
#include "common/program_name.h"
#include "common/runtime_files.h"
#include "dataplane/dataplane.h"

namespace dt {
namespace {

// The agent's last reload outcome: "<generation> ok|partial|error <message>", or
// "<generation> busy" while it is reloading.
bool read_reload_status(const std::string &path, unsigned long long *gen, std::string *rest) {
  std::ifstream in(path);
  if (!(in >> *gen)) return false;
  std::getline(in, *rest);
  if (!rest->empty() && (*rest)[0] == ' ') rest->erase(0, 1);
  return true;
}

}  // namespace

int cmd_reload(int argc, char **argv) {
  ReloadOptions opt;
  if (int code = parse_reload_command(argc, argv, &opt); code >= 0) return code;
  if (!agent_running(opt.pin_dir)) {
    fprintf(stderr, "%s: no agent is running with pin directory %s\n", command_name("reload").c_str(),
            opt.pin_dir.c_str());
    return 1;
  }
  std::ifstream lock(runtime_file(opt.pin_dir, kLockFile));
  long pid = 0;
  if (!(lock >> pid) || pid <= 1) {
    fprintf(stderr, "%s: cannot read the agent's PID from %s\n", command_name("reload").c_str(),
            runtime_file(opt.pin_dir, kLockFile).c_str());
    return 1;
  }
  const std::string status = runtime_file(opt.pin_dir, kReloadFile);
  unsigned long long before = 0, gen = 0;
  std::string rest;
  read_reload_status(status, &before, &rest);
  if (kill(static_cast<pid_t>(pid), SIGHUP) != 0) {
    fprintf(stderr, "%s: cannot signal pid %ld: %s\n", command_name("reload").c_str(), pid, strerror(errno));
    return 1;
  }
  // Bounded: kAnswerS for the agent to take the signal up ("busy"), then kReloadS in all for
  // the reload itself (a list of millions of prefixes on a loaded host).
  constexpr int kPollMs = 50, kAnswerS = 5, kReloadS = 300;
  bool busy = false;
  for (int i = 0; i < (busy ? kReloadS : kAnswerS) * 1000 / kPollMs; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
    if (read_reload_status(status, &gen, &rest) && gen > before) {
      if (rest == "busy") {
        busy = true;
        continue;
      }
      // "ok ...", "partial ..." (some of the file is in force) or "error ...".
      const bool ok = rest.rfind("ok ", 0) == 0, partial = rest.rfind("partial ", 0) == 0;
      printf("%s%s\n",
             ok        ? "reloaded: "
             : partial ? "reloaded in part: "
                       : "reload failed, nothing changed: ",
             rest.substr(rest.find(' ') + 1).c_str());
      return ok ? 0 : 1;
    }
  }
  // The agent writes its answer where this reads it: one it cannot write is no silence.
  if (busy)
    fprintf(stderr, "%s: pid %ld is still reloading after %d s (see its log)\n", command_name("reload").c_str(), pid,
            kReloadS);
  else if (const std::string why = unwritable_reason(status); !why.empty())
    fprintf(stderr, "%s: pid %ld cannot write its answer: %s (whether the reload worked is in its log)\n",
            command_name("reload").c_str(), pid, why.c_str());
  else
    fprintf(stderr, "%s: pid %ld did not answer within %d s (see its log)\n", command_name("reload").c_str(), pid,
            kAnswerS);
  return 1;
}

}  // namespace dt
