// program_name.h - the name the program was invoked as, for usage lines, errors and hints.
// Installed it is dthrottle-agent, built it is build/agent: a message names the command the
// user typed, so that its advice ("Try 'dthrottle-agent stats --help'") can be pasted back.
#pragma once

#include <string>

namespace dt {

// From argv[0] (main sets it first): its last path component. Until set: "dthrottle-agent".
void set_program_name(const char *argv0);
const std::string &program_name();

// "NAME" or "NAME SUBCOMMAND": how a subcommand's errors start ("dthrottle-agent stats").
std::string command_name(const std::string &subcommand = "");

// Help and usage texts are written with "%prog" where the program's name goes (as Python's
// optparse does): `text` with every "%prog" replaced by program_name().
std::string with_program_name(const std::string &text);

}  // namespace dt
