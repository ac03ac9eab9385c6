// cmd_check.cpp - `agent check [options]`: checks a command line and its --config file
// exactly as the daemon would (same parser, same policy limits), then exits without
// loading, attaching or binding anything. For operators before a (re)start. The checks
// are the daemon's own (daemon/run_config.h); with --curve-key, the key files too (every
// peer and hub needs a key in --curve-peers).
#include <cstdio>

#include "cli/cli.h"
#include "cluster/curve.h"
#include "commands/commands.h"
#include "common/program_name.h"
#include "daemon/run_config.h"
#include "dataplane/policy.h"
#include "query/query_listen.h"

namespace dt {
namespace {

// The query socket's access, as the daemon would set it up (docs/security.md).
void print_query_access(const RunOptions &opt) {
  if (!opt.query_socket.empty()) {
    std::string admins = "root, the agent's uid";
    for (uint32_t uid : opt.query_admin_uids) admins += ", " + std::to_string(uid);
    printf(
        "ok: query socket %s: mode %04o, group %u; admin commands (BUSY) from %s; idle connections closed "
        "after %.0f s\n",
        opt.query_socket.c_str(), opt.query_socket_mode, static_cast<unsigned>(opt.query_socket_gid), admins.c_str(),
        opt.query_idle_timeout_ns / 1e9);
  }
  if (!opt.query_listen.empty()) {
    std::string why;
    const bool loopback = listen_address_is_loopback(opt.query_listen, &why);
    printf("ok: query TCP %s: %s\n", opt.query_listen.c_str(),
           loopback ? "loopback (every local user may ask; no admin commands over TCP)"
                    : "not loopback (--query-insecure): anyone who reaches it may spend any tag's budget");
  }
}

}  // namespace

int cmd_check(int argc, char **argv) {
  RunOptions opt;
  if (int code = parse_run_command(argc, argv, &opt, "check"); code >= 0) return code;
  std::string err;
  // Every configuration error the daemon would exit with (status 2), with its message:
  // the rules file, the tag rules (theirs and --tag-rule), the adaptive limits.
  RunConfig config;
  if (!load_run_config(opt, &config, &err)) {
    fprintf(stderr, "%s: %s\n", command_name("check").c_str(), err.c_str());
    return 2;
  }
  // CurveZMQ: the key pair, the allowlist, and a key for every peer and hub.
  if (!opt.curve_key.empty()) {
    CurveKeys keys;
    if (!load_curve_keys(opt.curve_key, opt.curve_peers, &keys, &err) ||
        !check_curve_endpoints(keys, config.peers, opt.hubs, &err)) {
      fprintf(stderr, "%s: %s\n", command_name("check").c_str(), err.c_str());
      return 2;
    }
  }
  const std::string hook = opt.hook == AttachHook::Tc ? std::string("attach tc (ingress)")
                           : opt.hook == AttachHook::XdpMulti
                               ? std::string("attach xdp-multi (native, libxdp's dispatcher)")
                               : std::string("xdp-mode ") + xdp_mode_name(opt.mode);
  printf("ok: %s: %s; %s, pinned in %s\n", opt.iface.c_str(), describe_run_rules(config).c_str(), hook.c_str(),
         opt.pin_dir.c_str());
  if (opt.cluster())
    printf("ok: cluster node %s: peers %zu%s%s%s, hubs %zu, publishing on %s, reports every %.0f ms%s\n",
           config.opt.node_id.c_str(), config.peers.size(), opt.peers_file.empty() ? "" : " (with ",
           opt.peers_file.c_str(), opt.peers_file.empty() ? "" : ")", opt.hubs.size(),
           opt.listen.empty() ? "(none)" : opt.listen.c_str(), opt.period_ns / 1e6,
           opt.curve_key.empty() ? ", insecure (--insecure-cluster: no keys, anyone can forge or read reports)"
                                 : ", CurveZMQ keys");
  print_query_access(opt);
  return 0;
}

}  // namespace dt
