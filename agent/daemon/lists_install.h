// lists_install.h - the rule set's allow and deny lists put in force (docs/lists.md), at
// start and on every reload, with one log line saying what is loaded and how long it took.
#pragma once

#include <string>

#include "dataplane/list_maps.h"
#include "rules/rules.h"

namespace dt {

// Loads next's lists into the kernel; a list equal to prev's (a reload) is left as it is.
// True (logged: sizes, files, load time), or false with *err (nothing changed then).
bool install_lists(const ListMapFds &m, const LoadedRules &next, const LoadedRules *prev, std::string *err);

// "allow list 12 prefixes (allow.txt), deny list 1000000 (deny.netset)"; "" without lists.
std::string describe_lists(const LoadedRules &r);

}  // namespace dt
