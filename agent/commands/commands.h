// commands.h - the agent's subcommands; each returns the process exit code
// (0 success, 1 runtime failure, 2 usage error).
#pragma once

namespace dt {

int cmd_run(int argc, char **argv);          // agent --iface ... (the daemon)
int cmd_stats(int argc, char **argv);        // agent stats ...
int cmd_top(int argc, char **argv);          // agent top ... (stats as rates, live)
int cmd_check(int argc, char **argv);        // agent check ... (validate the run options)
int cmd_hub(int argc, char **argv);          // agent hub ...
int cmd_explain(int argc, char **argv);      // agent explain ADDR (why is it throttled?)
int cmd_reload(int argc, char **argv);       // agent reload ...
int cmd_keygen(int argc, char **argv);       // agent keygen NAME (a CurveZMQ key pair)
int cmd_crowdsec(int argc, char **argv);     // agent crowdsec ... (a CrowdSec bouncer)
int cmd_ban(int argc, char **argv);          // agent ban ADDR|PREFIX --for D (docs/bans.md)
int cmd_unban(int argc, char **argv);        // agent unban ADDR|PREFIX
int cmd_bans(int argc, char **argv);         // agent bans (list)
int cmd_capture(int argc, char **argv);      // agent capture -w FILE (samples of decided packets)
int cmd_suggest(int argc, char **argv);      // agent suggest --for D (a rate and burst per rule)
int cmd_fingerprint(int argc, char **argv);  // agent fingerprint -r FILE (an attack's header values)

}  // namespace dt
