// cmd_explain.cpp - `agent explain ADDR`: why a source is throttled (or not), from the
// pinned maps, and which peers reported it, from the running agent (SIGUSR1 and two
// runtime files: the request and the answer; daemon/explain_watch.h answers).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "bans/ban_store.h"
#include "cli/cli.h"
#include "commands/commands.h"
#include "commands/explain.h"
#include "common/address.h"
#include "common/files.h"
#include "common/json.h"
#include "common/program_name.h"
#include "common/runtime_files.h"
#include "dataplane/dataplane.h"
#include "dataplane/map_reader.h"

namespace dt {
namespace {

long agent_pid(const std::string &pin_dir) {
  std::ifstream lock(runtime_file(pin_dir, kLockFile));
  long pid = 0;
  return (lock >> pid) && pid > 1 ? pid : 0;
}

// The answer file, once it holds the answer to request `id`.
bool read_answer(const std::string &path, const std::string &id, Json *out) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("id", "") != id) return false;
  *out = std::move(j);
  return true;
}

void take_answer(const Json &j, ExplainPeers *p) {
  if (!j.value("cluster", false)) {
    p->state = ExplainPeers::State::NoCluster;
    return;
  }
  p->state = ExplainPeers::State::Answered;
  p->window_ms = j.value("window_ms", 0ull);
  for (const Json &r : j.value("peers", Json::array()))
    p->reports.push_back({r.value("node", ""), r.value("rule", ""), r.value("hits", 0ull), r.value("reports", 0ull)});
}

// Asks the running agent which peers report the address, waiting for its answer.
ExplainPeers ask_agent(const ExplainOptions &opt) {
  ExplainPeers p;
  if (opt.watch_ns == 0) return p;
  const long pid = agent_running(opt.pin_dir) ? agent_pid(opt.pin_dir) : 0;
  if (!pid) return p.state = ExplainPeers::State::NoAgent, p;
  const uint64_t window_ms = opt.watch_ns / 1'000'000;
  const std::string id =
      std::to_string(getpid()) + "-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  p.state = ExplainPeers::State::NoAnswer;
  std::string err;
  if (!write_file_atomic(runtime_file(opt.pin_dir, kExplainRequest),
                         id + " " + opt.address + " " + std::to_string(window_ms) + "\n", &err)) {
    fprintf(stderr, "%s: cannot ask the agent which peers report %s: %s\n", command_name("explain").c_str(),
            opt.address.c_str(), err.c_str());
    return p;
  }
  if (kill(static_cast<pid_t>(pid), SIGUSR1) != 0) return p;
  const std::string answer = runtime_file(opt.pin_dir, kExplainAnswer);
  Json j;
  for (uint64_t waited = 0; waited < window_ms + 2000; waited += 20) {  // bounded: the window plus 2 s
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (read_answer(answer, id, &j)) {
      take_answer(j, &p);
      return p;
    }
  }
  // No answer: one the agent could not write is said here (the agent logs it too).
  if (const std::string why = unwritable_reason(answer); !why.empty())
    fprintf(stderr, "%s: the agent cannot answer: %s\n", command_name("explain").c_str(), why.c_str());
  return p;
}

}  // namespace

int cmd_explain(int argc, char **argv) {
  ExplainOptions opt;
  if (int code = parse_explain_command(argc, argv, &opt); code >= 0) return code;
  dt_key probe{};
  if (!key_from_string(opt.address, &probe)) {
    fprintf(stderr, "%s: '%s' is not an IPv4 or IPv6 address\n", command_name("explain").c_str(), opt.address.c_str());
    return 2;
  }
  PinnedMaps maps;
  Explanation e;
  std::string err;
  if (!maps.open(opt.pin_dir, &err) || !read_explanation(maps, opt.pin_dir, opt.address, &e, &err)) {
    fprintf(stderr, "%s: %s\n", command_name("explain").c_str(), err.c_str());
    return 1;
  }
  if (auto bans = BanStore::open(opt.pin_dir, &err)) {  // pins of an agent older than bans have none
    e.bans_read = true;
    e.ban = bans->covering(e.addr.addr);
  }
  read_verified_source(opt.pin_dir, &e);
  e.peers = ask_agent(opt);
  const std::string text = opt.json ? render_explanation_json(e) : render_explanation_text(e);
  fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace dt
