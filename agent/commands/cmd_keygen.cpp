// cmd_keygen.cpp - `agent keygen NAME`: a CurveZMQ key pair for one node of a
// secured cluster (the files cluster/curve.h reads).
#include <sys/stat.h>
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "cli/cli.h"
#include "commands/commands.h"

namespace dt {

int cmd_keygen(int argc, char **argv) {
  KeygenOptions opt;
  if (int code = parse_keygen_command(argc, argv, &opt); code >= 0) return code;
  const std::string &name = opt.name, &dir = opt.dir, &ep = opt.endpoint;
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
