// cmd_stats.cpp - `agent stats`: the pinned maps as a table or as JSON (stats_render.h).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "bans/ban_render.h"
#include "bans/ban_store.h"
#include "cli/cli.h"
#include "commands/commands.h"
#include "commands/stats_render.h"
#include "commands/stats_view.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/program_name.h"
#include "common/runtime_files.h"
#include "dataplane/dataplane.h"
#include "dataplane/map_reader.h"

namespace dt {
namespace {

// A running agent's status file (cluster, adaptive rules), or "" (none, or no agent running).
std::string read_status_file(const std::string &pin_dir, const char *suffix) {
  if (!agent_running(pin_dir)) return "";  // a killed agent's last status is stale
  std::ifstream in(runtime_file(pin_dir, suffix));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The bans with their counts, for the stats (none: "", as an agent older than bans has).
std::string bans_status(const std::string &pin_dir, bool json) {
  std::string err;
  std::vector<Ban> bans;
  auto store = BanStore::open(pin_dir, &err);
  if (!store || !store->list(&bans, &err) || bans.empty()) return "";
  const uint64_t now = mono_now_ns();
  return json ? dump_json(bans_json_list(bans, now)) : render_bans_text(bans, now);
}

}  // namespace

int cmd_stats(int argc, char **argv) {
  StatsOptions opt;
  if (int code = parse_stats_command(argc, argv, &opt); code >= 0) return code;
  std::string err;
  PinnedMaps maps;
  StatsSnapshot snap;
  if (!maps.open(opt.pin_dir, &err) || !read_snapshot(maps, opt.pin_dir, &snap, &err)) {
    fprintf(stderr, "%s: %s\n", command_name("stats").c_str(), err.c_str());
    return 1;
  }
  AgentStatusFiles status;
  status.cluster = read_status_file(opt.pin_dir, opt.json ? kClusterStatusJson : kClusterStatusText);
  status.adaptive = read_status_file(opt.pin_dir, opt.json ? kAdaptiveStatusJson : kAdaptiveStatusText);
  status.escalation = read_status_file(opt.pin_dir, opt.json ? kEscalationStatusJson : kEscalationStatusText);
  status.events = read_status_file(opt.pin_dir, opt.json ? kEventsStatusJson : kEventsStatusText);
  status.hook = recorded_hook(opt.pin_dir);  // the attachment outlives a killed agent: read it anyway
  status.bans = bans_status(opt.pin_dir, opt.json);
  const std::string out = opt.json ? render_stats_json(snap, opt, status) : render_stats_text(snap, opt, status);
  fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace dt
