// fingerprint_options.cpp - `agent fingerprint`'s option table, --help text and checks.
#include "fingerprint/fingerprint_options.h"

#include "cli/option_values.h"
#include "cli/options.h"
#include "common/program_name.h"

namespace dt {
namespace {

const char kFingerprintUsage[] =
    "Usage: %prog fingerprint -r FILE [--name NAME] [--top N] [--max-packets N] [--json]\n"
    "\n"
    "Reads a capture of dropped and passed packets (agent capture --dropped --would-drop\n"
    "--passed -w FILE, pcapng) and tells the attack from the rest: for each header field\n"
    "(protocol, source port, destination port, length, TTL, TCP flags) the values that\n"
    "dominate the dropped samples, with their share there and among the ordinary ones (passed\n"
    "packets of sources with no dropped sample), then the narrowest rule that still matches\n"
    "95% of the dropped samples and under 1% of the ordinary ones, as TOML to paste into the\n"
    "rules file: a deny rule in dry run. --json prints the same as one JSON document. Reads\n"
    "the file only: no agent, no root needed.\n"
    "\n";

const char kFingerprintExamples[] =
    "\n"
    "Examples:\n"
    "  %prog capture -i eth0 --dropped --would-drop --passed --count 20000 --per-cpu-rate 2000 -w attack.pcapng\n"
    "  %prog fingerprint -r attack.pcapng --name ntp-flood\n";

}  // namespace

int parse_fingerprint_command(int argc, char **argv, FingerprintOptions *o) {
  std::vector<OptionSpec> options = {
      {"read", 'r', "FILE", "the capture to read (pcapng, as agent capture writes it)", store(&o->input)},
      {"name", 0, "NAME", "the proposed rule's name (default fingerprint)", store(&o->name)},
      {"top", 0, "N", "values shown per field, 1 to 20 (default 3)", count_into(&o->top, 1, 20)},
      {"max-packets", 0, "N", "read at most N packets, 1 to 10000000 (default 1000000)",
       count_into(&o->max_packets, 1, 10'000'000)},
      {"json", 0, nullptr, "machine-readable output: one JSON document", turn_on(&o->json)},
  };
  const CommandSpec spec(command_name("fingerprint"), kFingerprintUsage, std::move(options), 0, kFingerprintExamples);
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &, std::string *err) {
    if (o->input.empty())
      return *err = "say which capture to read: -r FILE (agent capture -w FILE)", ParseOutcome::Error;
    if (o->name.empty() || o->name.find_first_of("\"\\\n") != std::string::npos)
      return *err = "--name: a rule name without quotes, backslashes or newlines", ParseOutcome::Error;
    return ParseOutcome::Ok;
  });
}

}  // namespace dt
