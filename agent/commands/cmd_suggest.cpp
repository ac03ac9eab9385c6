// cmd_suggest.cpp - `agent suggest`: a rate and burst per rule from the traffic the
// buckets count (agent/suggest/, docs/rules.md "Suggested limits").
#include "commands/commands.h"
#include "suggest/suggest_options.h"
#include "suggest/suggest_session.h"

namespace dt {

int cmd_suggest(int argc, char **argv) {
  SuggestOptions opt;
  if (int code = parse_suggest_command(argc, argv, &opt); code >= 0) return code;
  return run_suggest(opt);
}

}  // namespace dt
