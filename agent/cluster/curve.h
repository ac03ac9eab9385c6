// curve.h - CurveZMQ authentication and encryption of peer reports.
//
// Each node has a key pair (`agent keygen NAME` writes NAME.key, secret, and NAME.pub).
// --curve-key NAME.key makes this node's PUB socket a CURVE server that admits only
// subscribers whose public key is in --curve-peers DIR (checked by a ZAP handler), and
// its SUB socket a CURVE client of every peer. A peer's file in DIR says which endpoint
// it publishes on:
//     public = <40-character Z85 public key>
//     endpoint = 198.18.1.2:7700
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace dt {

struct CurvePeer {
  std::string public_key;  // Z85
  std::string endpoint;    // tcp://host:port, normalised ("" if the file has none)
  std::string file;
};

// Reads a key file: "public = ..." and, for a key pair, "secret = ...".
bool read_curve_file(const std::string &path, std::string *public_key, std::string *secret_key,
                     std::string *endpoint, std::string *err);
// Reads every *.pub file of `dir`.
bool read_curve_peers(const std::string &dir, std::vector<CurvePeer> *out, std::string *err);

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
CurveAuthPtr configure_curve(const std::string &key_file, const std::string &peers_dir,
                             zmq::context_t &ctx, zmq::socket_t &pub, zmq::socket_t &sub,
                             std::vector<CurvePeer> *peers, std::string *err);

// Connects `sub` to `endpoint` with the public key of the peer file naming it.
bool connect_curve_peer(zmq::socket_t &sub, const std::string &endpoint,
                        const std::vector<CurvePeer> &peers, const std::string &peers_dir,
                        std::string *err);

// `agent keygen NAME [--dir DIR] [--endpoint HOST:PORT]`.
}  // namespace dt
