// agent_args.h - command lines written as strings: parse_run_options on the agent's, and any
// command's entry point or parse with what it prints captured.
#pragma once

#include <gtest/gtest.h>

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

// run(argc, argv) on `args` (args[0]: the command's name; run: an entry point such as
// cmd_keygen, or a lambda around a parse), with stdout and stderr captured: what it wrote to
// each goes to *out and *err (null: dropped). Returns what run returned.
template <class Run>
int run_captured(Run run, const std::vector<std::string> &args, std::string *err, std::string *out = nullptr) {
  ArgvList a;
  for (const auto &x : args) a.push(x);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int rc = run(a.argc(), a.argv());
  std::string printed = testing::internal::GetCapturedStdout();
  if (out) *out = std::move(printed);
  std::string complained = testing::internal::GetCapturedStderr();
  if (err) *err = std::move(complained);
  return rc;
}

}  // namespace dt::test
