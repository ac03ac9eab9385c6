// cmd_hub.cpp - `agent hub`: a ZeroMQ XSUB/XPUB proxy that relays every agent's
// reports to every other agent, so N agents need N connections, not N x (N-1); with
// --curve-key a CurveZMQ server on both ports, admitting only the agents' keys.
#include <signal.h>

#include <cstdio>
#include <thread>
#include <zmq.hpp>

#include "cli/cli.h"
#include "cluster/curve.h"
#include "cluster/peer_protocol.h"
#include "commands/commands.h"
#include "common/endpoint.h"
#include "common/log.h"

namespace dt {

namespace {

// SIGHUP: the agents' keys read again (agents added or removed without a restart); a
// directory that cannot be read keeps the allowlist in force.
void reload_allowlist(const HubOptions &opt, CurveAuth *auth) {
  if (!auth) {
    DT_INFO("SIGHUP received: nothing to reload without --curve-key");
    return;
  }
  CurveKeys keys;
  std::string err;
  if (!load_curve_keys(opt.curve_key, opt.curve_peers, &keys, &err)) {
    DT_ERROR("reload failed, the previous agent keys stay allowed: %s", err.c_str());
    return;
  }
  update_curve_allowed(auth, keys.peers);
  DT_INFO("reloaded %s: %zu agent keys allowed (connected agents keep their sessions)", opt.curve_peers.c_str(),
          keys.peers.size());
}

}  // namespace

int cmd_hub(int argc, char **argv) {
  HubOptions opt;
  if (int code = parse_hub_command(argc, argv, &opt); code >= 0) return code;
  set_log_level(opt.log_level);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);  // --curve-peers read again
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  std::string backend, err;
  if (!hub_backend_endpoint(opt.listen, &backend, &err)) {  // parse_hub_command checked it
    DT_ERROR("--listen: %s", err.c_str());
    return 2;
  }
  zmq::context_t ctx(1);
  zmq::socket_t front(ctx, zmq::socket_type::xsub), back(ctx, zmq::socket_type::xpub);
  zmq::socket_t control(ctx, zmq::socket_type::pair), controller(ctx, zmq::socket_type::pair);
  CurveAuthPtr auth;  // before the sockets are closed: declared after them, destroyed first
  try {
    for (auto *s : {&front, &back, &control, &controller}) s->set(zmq::sockopt::linger, 0);
    // No message larger than an agent accepts (reports on the frontend, subscriptions on
    // the backend): ZeroMQ drops the connection that sends one, before buffering it.
    for (auto *s : {&front, &back}) s->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxAcceptedBytes));
    // A connection that has not finished its handshake (CURVE included) in 3 s is closed
    // (ZeroMQ's default: 30 s): a stranger's stalled connections hold descriptors briefly.
    for (auto *s : {&front, &back}) s->set(zmq::sockopt::handshake_ivl, 3000);
    if (!opt.curve_key.empty()) {
      CurveKeys keys;
      if (!load_curve_keys(opt.curve_key, opt.curve_peers, &keys, &err)) {
        DT_ERROR("%s", err.c_str());
        return 2;
      }
      auth = start_curve_auth(ctx, keys.peers, "an agent");
      make_curve_server(front, keys);
      make_curve_server(back, keys);
      DT_INFO("CurveZMQ on: %zu agent keys allowed", keys.peers.size());
    } else {
      DT_WARN("insecure cluster (--insecure-cluster): reports pass the hub unauthenticated and unencrypted; "
              "anyone who reaches %s can publish or read them", opt.listen.c_str());
    }
    front.bind(opt.listen);
    back.bind(backend);
    control.bind("inproc://hub-control");
    controller.connect("inproc://hub-control");
  } catch (const zmq::error_t &e) {
    DT_ERROR("cannot listen on %s and %s: %s", opt.listen.c_str(), backend.c_str(), e.what());
    return 1;
  }
  DT_INFO("hub relaying reports: agents publish to %s and subscribe to %s", opt.listen.c_str(), backend.c_str());
  std::thread proxy([&] {
    try {
      zmq::proxy_steerable(front, back, zmq::socket_ref(), control);
    } catch (const zmq::error_t &e) {
      if (e.num() != ETERM) DT_ERROR("hub proxy stopped: %s", e.what());
    }
  });
  int sig = 0;
  while (sigwait(&sigs, &sig) == 0 && sig == SIGHUP) reload_allowlist(opt, auth.get());
  DT_INFO("%s received: stopping the hub", sig == SIGINT ? "SIGINT" : "SIGTERM");
  controller.send(zmq::str_buffer("TERMINATE"), zmq::send_flags::none);
  proxy.join();
  return 0;
}

}  // namespace dt
