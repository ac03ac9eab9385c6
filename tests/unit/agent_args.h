// agent_args.h - parse_run_options on an agent command line written as strings.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"
#include "rules/config_file.h"

namespace dt::test {

// parse_run_options on "agent" followed by `args`.
inline ParseOutcome parse_agent_args(const std::vector<std::string> &args, RunOptions *o, std::string *err) {
  ArgvList a;
  a.push("agent");
  for (const auto &x : args) a.push(x);
  return parse_run_options(a.argc(), a.argv(), o, err);
}

}  // namespace dt::test
