// program_name.cpp - the invoked name (program_name.h).
#include "common/program_name.h"

namespace dt {
namespace {

std::string &name_store() {
  static std::string name = "dthrottle-agent";
  return name;
}

}  // namespace

void set_program_name(const char *argv0) {
  if (!argv0 || !*argv0) return;
  const std::string path = argv0;
  const size_t slash = path.find_last_of('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (!base.empty()) name_store() = base;
}

const std::string &program_name() { return name_store(); }

std::string command_name(const std::string &subcommand) {
  return subcommand.empty() ? program_name() : program_name() + " " + subcommand;
}

std::string with_program_name(const std::string &text) {
  static const std::string kMark = "%prog";
  std::string out;
  size_t from = 0;
  for (size_t at; (at = text.find(kMark, from)) != std::string::npos; from = at + kMark.size())
    out += text.substr(from, at - from) + program_name();
  return out + text.substr(from);
}

}  // namespace dt
