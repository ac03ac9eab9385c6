// cmd_keygen.cpp - `agent keygen NAME`: the keys of one member of a secured cluster (the
// files cluster/key_files.h describes): a CurveZMQ key pair, the report signing key
// derived from it, and the node id they speak for. --from upgrades an older keygen's
// files in place (same key pair: only the .pub needs redistributing).
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/cli.h"
#include "cluster/key_files.h"
#include "cluster/report_signing.h"
#include "commands/commands.h"
#include "common/program_name.h"
#include "common/report_types.h"

namespace dt {
namespace {

// The values the new files get (checked); 0 or the exit status.
// (--endpoint and --role were checked by parse_keygen_command.)
int check_keygen_values(KeygenOptions *a, CurvePeer *pub) {
  if (!a->endpoint.empty()) pub->endpoint = a->endpoint;
  if (!a->role.empty()) pub->role = a->role == "hub" ? KeyRole::Hub : KeyRole::Node;
  if (!valid_node_id(pub->node_id)) {
    fprintf(stderr, "%s: node id '%s' must be 1 to 64 characters of A-Z a-z 0-9 . _ : -%s\n",
            command_name("keygen").c_str(), pub->node_id.c_str(),
            a->node_id.empty() ? " (it is NAME unless --node-id gives one)" : "");
    return 2;
  }
  return 0;
}

// --from: the key pair of FILE; its node id, then the old .pub's endpoint and role,
// are the defaults. *rewrite_key: FILE's node id changes (or it had none).
int read_from(KeygenOptions *a, KeyPairFile *key, CurvePeer *pub, bool *rewrite_key) {
  std::string err;
  if (!read_key_pair_file(a->from, key, &err, true)) {
    fprintf(stderr, "%s: --from %s\n", command_name("keygen").c_str(), err.c_str());
    return 2;
  }
  if (a->dir.empty()) a->dir = a->from.rfind('/') == std::string::npos ? "." : a->from.substr(0, a->from.rfind('/'));
  CurvePeer old;
  if (read_public_file(a->dir + "/" + a->name + ".pub", &old, &err, true) && old.public_key == key->public_key) {
    pub->endpoint = old.endpoint;
    pub->role = old.role;
  }
  const std::string node_id = !a->node_id.empty() ? a->node_id : !key->node_id.empty() ? key->node_id : a->name;
  *rewrite_key = node_id != key->node_id;
  key->node_id = pub->node_id = node_id;
  return 0;
}

}  // namespace

int cmd_keygen(int argc, char **argv) {
  KeygenOptions a;
  if (int code = parse_keygen_command(argc, argv, &a); code >= 0) return code;
  KeyPairFile key;
  CurvePeer pub;
  bool write_key = true;
  if (!a.from.empty()) {
    if (int rc = read_from(&a, &key, &pub, &write_key); rc != 0) return rc;
  } else {
    key.node_id = pub.node_id = a.node_id.empty() ? a.name : a.node_id;
  }
  if (a.dir.empty()) a.dir = ".";
  if (int rc = check_keygen_values(&a, &pub); rc != 0) return rc;
  if (a.from.empty()) {
    char z85_pub[41], z85_sec[41];
    if (zmq_curve_keypair(z85_pub, z85_sec) != 0) {
      fprintf(stderr, "%s: this libzmq has no CURVE support: %s\n", command_name("keygen").c_str(),
              zmq_strerror(zmq_errno()));
      return 1;
    }
    key.public_key = z85_pub;
    key.secret_key = z85_sec;
  }
  SigningKey sign;
  std::string err;
  if (!derive_signing_key(key.secret_key, &sign, &err)) {
    fprintf(stderr, "%s: %s\n", command_name("keygen").c_str(), err.c_str());
    return 1;
  }
  pub.public_key = key.public_key;
  pub.sign_key = sign.public_z85();
  const std::string key_path = a.from.empty() ? a.dir + "/" + a.name + ".key" : a.from;
  const std::string pub_path = a.dir + "/" + a.name + ".pub";
  // Each file is new, renamed over the path (--from FILE too: never half a secret, always 0600).
  const bool ok = (!write_key || write_key_pair_file(key_path, key, &err)) && write_public_file(pub_path, pub, &err);
  if (!ok) {
    fprintf(stderr, "%s: %s\n", command_name("keygen").c_str(), err.c_str());
    return 1;
  }
  if (write_key)
    printf("wrote %s (secret) and %s (public) for node %s\n", key_path.c_str(), pub_path.c_str(), pub.node_id.c_str());
  else printf("wrote %s (public) for node %s from %s\n", pub_path.c_str(), pub.node_id.c_str(), key_path.c_str());
  return 0;
}

}  // namespace dt
