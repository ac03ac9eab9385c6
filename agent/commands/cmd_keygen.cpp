// cmd_keygen.cpp - `agent keygen NAME`: a CurveZMQ key pair for one node of a
// secured cluster (the files cluster/curve.h reads).
#include <sys/stat.h>
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/endpoint.h"
#include "commands/commands.h"

namespace dt {

int cmd_keygen(int argc, char **argv) {
  std::string name, dir = ".", endpoint;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if ((a == "--dir" || a == "--endpoint") && i + 1 < argc) {
      (a == "--dir" ? dir : endpoint) = argv[++i];
    } else if (a == "-h" || a == "--help") {
      printf("Usage: agent keygen NAME [--dir DIR] [--endpoint HOST:PORT]\n\n"
             "Creates a CurveZMQ key pair for one node: DIR/NAME.key (secret, mode 0600; give it\n"
             "to that node's --curve-key) and DIR/NAME.pub (its public key; copy it into every\n"
             "peer's --curve-peers directory). --endpoint records where NAME publishes\n"
             "(its --listen address as peers reach it) in NAME.pub.\n");
      return 0;
    } else if (name.empty() && a[0] != '-') {
      name = a;
    } else {
      fprintf(stderr, "agent keygen: unexpected argument '%s'\nTry 'agent keygen --help'.\n", a.c_str());
      return 2;
    }
  }
  if (name.empty() || name.find('/') != std::string::npos) {
    fprintf(stderr, "agent keygen: give the node a NAME (no '/')\nTry 'agent keygen --help'.\n");
    return 2;
  }
  std::string ep, err;
  if (!endpoint.empty() && !normalize_endpoint(endpoint, false, &ep, &err)) {
    fprintf(stderr, "agent keygen: --endpoint %s\n", err.c_str());
    return 2;
  }
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) {
    fprintf(stderr, "agent keygen: this libzmq has no CURVE support: %s\n", zmq_strerror(zmq_errno()));
    return 1;
  }
  const std::string key_path = dir + "/" + name + ".key", pub_path = dir + "/" + name + ".pub";
  umask(077);
  std::ofstream k(key_path, std::ios::trunc);
  k << "# dthrottle CurveZMQ key pair of node " << name << ": keep it secret (--curve-key)\n"
    << "public = " << pub << "\nsecret = " << sec << "\n";
  std::ofstream p(pub_path, std::ios::trunc);
  p << "# dthrottle CurveZMQ public key of node " << name << ": copy into the peers' --curve-peers DIR\n"
    << "public = " << pub << "\n";
  if (!ep.empty()) p << "endpoint = " << ep.substr(6) << "\n";
  k.close();
  p.close();
  if (!k || !p) {
    fprintf(stderr, "agent keygen: cannot write %s or %s: %s\n", key_path.c_str(), pub_path.c_str(), strerror(errno));
    return 1;
  }
  chmod(pub_path.c_str(), 0644);
  printf("wrote %s (secret) and %s (public)\n", key_path.c_str(), pub_path.c_str());
  return 0;
}

}  // namespace dt
