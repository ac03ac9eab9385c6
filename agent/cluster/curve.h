// curve.h - CurveZMQ authentication and encryption of peer reports.
//
// Each node has a key pair (`agent keygen NAME` writes NAME.key, secret, and NAME.pub:
// their format in cluster/key_files.h).
// --curve-key NAME.key makes this node's PUB socket a CURVE server that admits only
// subscribers whose public key is in --curve-peers DIR (checked by a ZAP handler), and
// its SUB socket a CURVE client of every peer. Through a hub (`agent hub --curve-key`),
// the hub is the CURVE server on both its ports, with its own allowlist, and the agents'
// PUB and SUB sockets are its clients. A peer's (or hub's) file in DIR says which
// endpoint it publishes on (a hub: its frontend, HOST:PORT of --hub): `endpoint = HOST:PORT`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cluster/key_files.h"
#include "cluster/zmq_fwd.h"

namespace dt {

// The ZAP handler: answers the PUB socket's authentication requests from a thread.
class CurveAuth;
void destroy_curve_auth(CurveAuth *auth);
struct CurveAuthDeleter {
  void operator()(CurveAuth *a) const { destroy_curve_auth(a); }
};
using CurveAuthPtr = std::unique_ptr<CurveAuth, CurveAuthDeleter>;

// Configures `pub` as a CURVE server admitting only the public keys of peers_dir, and
// `sub` as a CURVE client; starts the ZAP handler, which lives as long as the returned
// object (destroy it before the context). Then connect the SUB socket to each peer
// with connect_curve_peer(), which sets that peer's server key first.
CurveAuthPtr configure_curve(const std::string &key_file, const std::string &peers_dir, zmq::context_t &ctx,
                             zmq::socket_t &pub, zmq::socket_t &sub, std::vector<CurvePeer> *peers, std::string *err);

// Connects `sub` to `endpoint` with the public key of the peer file naming it.
bool connect_curve_peer(zmq::socket_t &sub, const std::string &endpoint, const std::vector<CurvePeer> &peers,
                        const std::string &peers_dir, std::string *err);

// This node's key pair and the allowlist, read together.
struct CurveKeys {
  std::string public_key, secret_key;  // Z85
  std::string node_id;                 // the node id the key pair speaks for
  std::vector<CurvePeer> peers;        // the *.pub files of peers_dir
  std::string peers_dir;
};
// --curve-key FILE and --curve-peers DIR (both needed); false with *err.
bool load_curve_keys(const std::string &key_file, const std::string &peers_dir, CurveKeys *out, std::string *err);

// --curve-key binds the node id: *node_id becomes the node id of `key_file`; false with
// *err if the key cannot be read, or if *node_id was given (not "") and differs.
bool bind_node_id_to_key(const std::string &key_file, std::string *node_id, std::string *err);

// Starts a ZAP handler in `ctx` admitting the public keys of `peers` on every CURVE
// server socket of the context; `who` names a refused connection in the log ("an agent").
CurveAuthPtr start_curve_auth(zmq::context_t &ctx, const std::vector<CurvePeer> &peers, const std::string &who);
// Replaces the allowlist (a reload read the directory again).
void update_curve_allowed(CurveAuth *auth, const std::vector<CurvePeer> &peers);

// Makes the next bind of `s` a CURVE server's (with the ZAP domain of start_curve_auth).
void make_curve_server(zmq::socket_t &s, const CurveKeys &keys);

// Connects `s` to `endpoint` as a CURVE client of the server whose .pub file says
// `endpoint = key_endpoint` (a hub's frontend names the key of its backend too).
bool connect_curve_client(zmq::socket_t &s, const std::string &endpoint, const std::string &key_endpoint,
                          const CurveKeys &keys, std::string *err);

// The peer file naming `endpoint` (tcp://host:port), or nullptr.
const CurvePeer *find_curve_peer(const std::vector<CurvePeer> &peers, const std::string &endpoint);

// Every peer and hub endpoint (tcp://host:port) has a key in `keys` (agent check, and the
// agent before it connects); false with the first one missing in *err.
bool check_curve_endpoints(const CurveKeys &keys, const std::vector<std::string> &peers,
                           const std::vector<std::string> &hubs, std::string *err);

// "no public key for peer ... add its .pub file with the line 'endpoint = ...'".
std::string no_curve_key_error(const std::string &endpoint, const std::string &peers_dir);

}  // namespace dt
