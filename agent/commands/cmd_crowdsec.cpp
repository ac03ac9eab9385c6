// cmd_crowdsec.cpp - `agent crowdsec`: the CrowdSec bouncer (crowdsec/bouncer.h) on the ban
// maps of one agent, until SIGTERM or SIGINT.
#include <signal.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>

#include "cli/cli.h"
#include "commands/commands.h"
#include "common/line_file.h"
#include "common/log.h"
#include "common/program_name.h"
#include "crowdsec/bouncer.h"
#include "crowdsec/store_target.h"

namespace dt {
namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop_signal(int) { g_stop = 1; }

// The key: the first line of the file that holds something. "" with *err if none.
std::string read_api_key(const std::string &path, std::string *err) {
  std::string text;
  ReadFailure failure;
  if (!read_text_file(path, &text, &failure))
    return *err = "cannot " + std::string(failure.step) + " --key-file " + path + ": " + failure.reason, "";
  const auto lines = content_lines(text, Comments::WholeLine);
  if (lines.empty() || lines[0].text.find_first_of(" \t") != std::string::npos)
    return *err = "--key-file " + path + " holds no key: write the key `cscli bouncers add NAME` printed, alone", "";
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 077))
    DT_WARN("--key-file %s can be read by other users: chmod 600 it", path.c_str());
  return lines[0].text;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;  // no SA_RESTART: a sleep ends at once
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a LAPI that closes the connection is a failed pull, not an exit
}

}  // namespace

int cmd_crowdsec(int argc, char **argv) {
  CrowdsecOptions opt;
  if (int code = parse_crowdsec_command(argc, argv, &opt); code >= 0) return code;
  set_log_level(opt.log_level);
  BouncerConfig config;
  std::string err;
  if (!parse_lapi_url(opt.lapi, &config.lapi, &err)) {  // parse_crowdsec_command checked it
    fprintf(stderr, "%s: --lapi: %s\n", command_name("crowdsec").c_str(), err.c_str());
    return 2;
  }
  config.lapi.ca_file = opt.ca_file;
  config.lapi.cert_file = opt.cert_file;
  config.lapi.key_file = opt.tls_key_file;
  if (lapi_url_is_https(config.lapi) && !lapi_tls_usable(config.lapi, &err)) {
    fprintf(stderr, "%s: %s\n", command_name("crowdsec").c_str(), err.c_str());
    return 2;
  }
  config.api_key = read_api_key(opt.key_file, &err);
  if (config.api_key.empty()) {
    fprintf(stderr, "%s: %s\n", command_name("crowdsec").c_str(), err.c_str());
    return 1;
  }
  auto store = BanStore::open(opt.pin_dir, &err);
  if (!store) {
    fprintf(stderr, "%s: %s\n", command_name("crowdsec").c_str(), err.c_str());
    return 1;
  }
  config.timing.poll_ns = opt.poll_ns;
  config.min_prefix = opt.min_prefix;
  install_stop_handlers();
  StoreBanTarget target(std::move(store), opt.pin_dir);
  DT_INFO("CrowdSec bouncer: LAPI %s%s, bans of %s, a pull every %.1fs", config.lapi.scheme_host_port.c_str(),
          config.lapi.path_prefix.c_str(), opt.pin_dir.c_str(), static_cast<double>(opt.poll_ns) / 1e9);
  return run_bouncer(config, target, &g_stop);
}

}  // namespace dt
