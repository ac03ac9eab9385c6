// key_files.h - the key files of a secured cluster, as `agent keygen` writes them and the
// agent and the hub read them.
//
// NAME.key (this node's secret; mode 0600; --curve-key):
//     public = <40-character Z85 CurveZMQ public key>
//     secret = <40-character Z85 CurveZMQ secret key>
//     node_id = web1
// NAME.pub (its public half; mode 0644; copied into every member's --curve-peers DIR):
//     public = <Z85 CurveZMQ public key>
//     sign = <Z85 Ed25519 public key: verifies the node's signed reports>
//     node_id = web1                    the one node id whose reports this key may sign
//     role = node                       or hub (see cluster/report_signing.h)
//     endpoint = 198.18.1.2:7700        optional: where it publishes (a hub: its --listen)
// '#' starts a comment line; other keys are an error. The signing key is derived from the
// CURVE secret (report_signing.h), so a node keeps one secret. A .pub without `sign` and
// `node_id` (an older keygen's) is refused with the command that upgrades it in place:
// `agent keygen NAME --from NAME.key`; a .key without `node_id` the same way.
#pragma once

#include <string>
#include <vector>

namespace dt {

// What a .pub key may sign: a node its own reports only; a hub key is reserved for the
// aggregate reports of a summing hub (report_signing.h says what agents do with it).
enum class KeyRole { Node, Hub };
const char *key_role_name(KeyRole r);

// One member's .pub file.
struct CurvePeer {
  std::string public_key;  // Z85 CURVE key
  std::string sign_key;    // Z85 Ed25519 public key
  std::string node_id;
  KeyRole role = KeyRole::Node;
  std::string endpoint;  // tcp://host:port, normalised ("" if the file has none)
  std::string file;
};

// This node's .key file.
struct KeyPairFile {
  std::string public_key, secret_key;  // Z85
  std::string node_id;                 // "" only when read with KeyPairAnyVersion
};

// A .key the agent or the hub is given must be a regular file that neither its group nor
// others may read or write (mode 0600 or 0400; systemd's LoadCredential= gives 0400):
// false with the fix (`chmod 600 FILE`) in *err. Refused, not warned about: a secret others
// could read may already be copied, and a warning in a log is easily missed (OpenSSH
// refuses such a key the same way). `agent keygen` writes 0600.
bool check_secret_key_mode(const std::string &path, std::string *err);

// Reads a .key. Fails on a missing node_id (an older keygen's file) unless any_version.
bool read_key_pair_file(const std::string &path, KeyPairFile *out, std::string *err, bool any_version = false);
// Reads a .pub. Fails on a missing sign or node_id unless any_version (then they may be "").
bool read_public_file(const std::string &path, CurvePeer *out, std::string *err, bool any_version = false);
// Reads every *.pub file of `dir`. Two files naming the same node id with different keys,
// or one key with two node ids, are an error (which one would speak for the node?).
bool read_curve_peers(const std::string &dir, std::vector<CurvePeer> *out, std::string *err);

// Writes the files: the .key with mode 0600, the .pub 0644, each a new file renamed over
// the path (an existing file of another mode, or a hard link, is replaced, never written
// into); a symlink or anything but a regular file at the path is refused, never followed.
bool write_key_pair_file(const std::string &path, const KeyPairFile &key, std::string *err);
bool write_public_file(const std::string &path, const CurvePeer &pub, std::string *err);

// The error for an older keygen's file: "regenerate it with agent keygen NAME --from NAME.key".
std::string old_key_file_error(const std::string &path, const char *missing);

}  // namespace dt
