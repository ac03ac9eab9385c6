// ban_options.cpp - the option tables of agent ban, unban and bans (cli.h), each with the
// --help text above its options and its checks after them (docs/bans.md).
#include "bans/ban_types.h"
#include "cli/cli.h"
#include "cli/option_values.h"
#include "common/program_name.h"

namespace dt {
namespace {

const char kBanUsage[] =
    "Usage: %prog ban ADDR|PREFIX --for DURATION [--reason TEXT] [--iface IFACE | --pin-dir DIR]\n"
    "\n"
    "Drops every packet from ADDR (or from every address of PREFIX: 198.18.0.0/24,\n"
    "2001:2::/48) until DURATION from now, before the rules look at it. Written into\n"
    "the pinned maps (no query socket needed); in a cluster the agent announces it, so\n"
    "every peer drops it within one report period. Banning a prefix again updates its\n"
    "ban (duration, reason). `%prog bans` lists the bans, `%prog unban` lifts one.\n"
    "With --dry-run the agent counts what bans would drop and drops nothing.\n"
    "\n";

const char kUnbanUsage[] =
    "Usage: %prog unban ADDR|PREFIX [--iface IFACE | --pin-dir DIR]\n"
    "\n"
    "Lifts the ban of exactly ADDR or PREFIX (as `%prog bans` lists it), here and, in a\n"
    "cluster, on every peer within one report period.\n"
    "\n";

const char kBansUsage[] =
    "Usage: %prog bans [--iface IFACE | --pin-dir DIR] [--json]\n"
    "\n"
    "Lists the bans: prefix, time left, packets dropped (or would-drop in dry run),\n"
    "origin (local, query, crowdsec, or the peer it came from), who set it, and why.\n"
    "\n";

// The ADDR|PREFIX operand, checked now so that a typo is said before the pins are opened.
ParseOutcome take_target(const char *command, const std::vector<std::string> &operands, BanOptions *o,
                         std::string *err) {
  if (operands.empty()) return *err = std::string("say what to ") + command + ": ADDR or PREFIX", ParseOutcome::Error;
  BanPrefix p;
  if (!parse_ban_prefix(operands[0], &p, err)) return ParseOutcome::Error;
  o->target = operands[0];
  return ParseOutcome::Ok;
}

}  // namespace

int parse_ban_command(int argc, char **argv, BanOptions *o) {
  std::vector<OptionSpec> options = with_pin_target(
      &o->iface, &o->pin_dir,
      {
          {"for", 0, "DURATION", "how long: 1s to 30d, e.g. 90s, 10m, 2h, 7d (required)",
           [o](const std::string &v, std::string *why) { return parse_ban_duration(v, &o->for_ns, why); }},
          {"reason", 0, "TEXT", "why (up to 95 bytes, shown by agent bans and on the peers)",
           [o](const std::string &v, std::string *why) {
             if (!valid_ban_text(v, kMaxBanReason))
               return *why = "a reason is up to 95 bytes of text without newlines or control bytes", false;
             return o->reason = v, true;
           }},
      },
      "the agent pinned in /sys/fs/bpf/dthrottle/IFACE", "the agent whose maps are pinned in DIR");
  const CommandSpec spec(command_name("ban"), kBanUsage, std::move(options), 1);
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &operands, std::string *err) {
    if (ParseOutcome r = take_target("ban", operands, o, err); r != ParseOutcome::Ok) return r;
    if (!o->for_ns) return *err = "say for how long: --for DURATION (e.g. --for 10m; at most 30d)", ParseOutcome::Error;
    return resolve_pin_dir(o->iface, &o->pin_dir, "ban on", err);
  });
}

int parse_unban_command(int argc, char **argv, BanOptions *o) {
  std::vector<OptionSpec> options =
      with_pin_target(&o->iface, &o->pin_dir, {}, "the agent pinned in /sys/fs/bpf/dthrottle/IFACE",
                      "the agent whose maps are pinned in DIR");
  const CommandSpec spec(command_name("unban"), kUnbanUsage, std::move(options), 1);
  return parse_subcommand(spec, argc, argv, [o](const std::vector<std::string> &operands, std::string *err) {
    if (ParseOutcome r = take_target("unban", operands, o, err); r != ParseOutcome::Ok) return r;
    return resolve_pin_dir(o->iface, &o->pin_dir, "unban on", err);
  });
}

int parse_bans_command(int argc, char **argv, BanOptions *o) {
  std::vector<OptionSpec> options =
      with_pin_target(&o->iface, &o->pin_dir, {{"json", 0, nullptr, "machine-readable output", turn_on(&o->json)}});
  return parse_subcommand({command_name("bans"), kBansUsage, std::move(options)}, argc, argv,
                          pin_target_check(o, "list the bans of"));
}

}  // namespace dt
