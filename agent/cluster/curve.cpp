// curve.cpp - the ZAP allowlist handler, CURVE servers and clients, the keys they use.
#include "cluster/curve.h"

#include <zmq.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/endpoint.h"
#include "common/log.h"
#include "common/program_name.h"

namespace dt {

class CurveAuth {
 public:
  CurveAuth(zmq::context_t &ctx, std::set<std::string> allowed, std::string who)
      : ctx_(ctx), allowed_(std::move(allowed)), who_(std::move(who)) {
    sock_ = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::rep);
    sock_->set(zmq::sockopt::linger, 0);
    sock_->bind("inproc://zeromq.zap.01");
    thread_ = std::thread([this] { run(); });
  }
  ~CurveAuth() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    sock_->close();
  }

  void set_allowed(std::set<std::string> keys) {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_ = std::move(keys);
  }

 private:
  bool allowed(const std::string &key) {
    std::lock_guard<std::mutex> lock(mu_);
    return allowed_.count(key) != 0;
  }

  // ZAP (RFC 27): version, request id, domain, address, identity, mechanism, key.
  void run() {
    while (!stop_) {
      zmq::pollitem_t item{sock_->handle(), 0, ZMQ_POLLIN, 0};
      try {
        if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
        std::vector<zmq::message_t> req;
        do {
          req.emplace_back();
          if (!sock_->recv(req.back(), zmq::recv_flags::none)) break;
        } while (req.back().more());
        std::string status = "400", text = "unknown key";
        if (req.size() >= 7 && req[5].to_string() == "CURVE" && req[6].size() == 32) {
          char z85[41];
          zmq_z85_encode(z85, static_cast<const uint8_t *>(req[6].data()), 32);
          if (allowed(z85)) {
            status = "200";
            text = "OK";
          } else {
            refused_++;
            uint64_t suppressed = 0;
            if (log_limit_.allow(mono_now_ns(), &suppressed))
              DT_WARN("refused %s from %s: its public key %s is not in --curve-peers (%llu refusals so far)",
                      who_.c_str(), req[3].to_string().c_str(), z85, static_cast<unsigned long long>(refused_));
          }
        }
        const std::string version = req.empty() ? "1.0" : req[0].to_string();
        const std::string id = req.size() > 1 ? req[1].to_string() : "";
        sock_->send(zmq::buffer(version), zmq::send_flags::sndmore);
        sock_->send(zmq::buffer(id), zmq::send_flags::sndmore);
        sock_->send(zmq::buffer(status), zmq::send_flags::sndmore);
        sock_->send(zmq::buffer(text), zmq::send_flags::sndmore);
        sock_->send(zmq::str_buffer(""), zmq::send_flags::sndmore);
        sock_->send(zmq::str_buffer(""), zmq::send_flags::none);
      } catch (const zmq::error_t &e) {
        if (e.num() == ETERM) return;
        DT_WARN("CurveZMQ authentication handler: %s", e.what());
      }
    }
  }

  zmq::context_t &ctx_;
  std::mutex mu_;  // allowed_: replaced by a reload while the thread reads it
  std::set<std::string> allowed_;
  std::string who_;  // what a refused connection is, for the log
  std::unique_ptr<zmq::socket_t> sock_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  uint64_t refused_ = 0;
  LogLimiter log_limit_{10'000'000'000ull, 3};  // a refused peer retries all the time
};

void destroy_curve_auth(CurveAuth *auth) { delete auth; }

std::set<std::string> allowed_keys(const std::vector<CurvePeer> &peers) {
  std::set<std::string> allowed;
  for (const auto &p : peers) allowed.insert(p.public_key);
  return allowed;
}

bool load_curve_keys(const std::string &key_file, const std::string &peers_dir, CurveKeys *out, std::string *err) {
  KeyPairFile key;
  if (!check_secret_key_mode(key_file, err) || !read_key_pair_file(key_file, &key, err)) return false;
  out->public_key = key.public_key;
  out->secret_key = key.secret_key;
  out->node_id = key.node_id;
  if (peers_dir.empty()) {
    *err = "--curve-key needs --curve-peers DIR: the public keys of the peers allowed in";
    return false;
  }
  out->peers_dir = peers_dir;
  out->peers.clear();
  if (!read_curve_peers(peers_dir, &out->peers, err)) return false;
  for (const auto &p : out->peers)  // our own .pub may be there (one directory for all), not another's
    if (p.node_id == out->node_id && p.public_key != out->public_key) {
      *err = p.file + " speaks for node " + p.node_id + ", this node (" + key_file +
             "), with another key: remove it, or use that node's key";
      return false;
    }
  return true;
}

bool bind_node_id_to_key(const std::string &key_file, std::string *node_id, std::string *err) {
  KeyPairFile key;
  // Checked here too: load_run_config's configuration errors exit 2 before anything is attached.
  if (!check_secret_key_mode(key_file, err) || !read_key_pair_file(key_file, &key, err)) return false;
  if (!node_id->empty() && *node_id != key.node_id) {
    const std::string base = key_file.substr(key_file.rfind('/') == std::string::npos ? 0 : key_file.rfind('/') + 1);
    *err = "--node-id " + *node_id + " but " + base + " speaks for node " + key.node_id +
           ": drop --node-id (the key names the node), or use that node's key";
    return false;
  }
  *node_id = key.node_id;
  return true;
}

CurveAuthPtr start_curve_auth(zmq::context_t &ctx, const std::vector<CurvePeer> &peers, const std::string &who) {
  return CurveAuthPtr(new CurveAuth(ctx, allowed_keys(peers), who));
}

void update_curve_allowed(CurveAuth *auth, const std::vector<CurvePeer> &peers) {
  if (auth) auth->set_allowed(allowed_keys(peers));
}

void make_curve_server(zmq::socket_t &s, const CurveKeys &keys) {
  s.set(zmq::sockopt::curve_server, 1);
  s.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  s.set(zmq::sockopt::zap_domain, "dthrottle");
}

const CurvePeer *find_curve_peer(const std::vector<CurvePeer> &peers, const std::string &endpoint) {
  for (const auto &p : peers)
    if (p.endpoint == endpoint) return &p;
  return nullptr;
}

std::string no_curve_key_error(const std::string &endpoint, const std::string &peers_dir) {
  return "no public key for peer " + endpoint + " in " + peers_dir +
         ": add its .pub file with the line 'endpoint = " + endpoint.substr(endpoint.rfind("tcp://", 0) == 0 ? 6 : 0) +
         "'";
}

bool check_curve_endpoints(const CurveKeys &keys, const std::vector<std::string> &peers,
                           const std::vector<std::string> &hubs, std::string *err) {
  for (const auto &p : peers) {
    if (!find_curve_peer(keys.peers, p)) {
      *err = no_curve_key_error(p, keys.peers_dir);
      return false;
    }
  }
  for (const auto &h : hubs) {
    if (!find_curve_peer(keys.peers, h)) {
      const std::string hp = h.substr(h.rfind("tcp://", 0) == 0 ? 6 : 0);
      *err = "no public key for hub " + hp + " in " + keys.peers_dir + ": add the hub's .pub file (" +
             command_name("keygen") + ") with the line 'endpoint = " + hp + "'";
      return false;
    }
  }
  return true;
}

bool connect_curve_client(zmq::socket_t &s, const std::string &endpoint, const std::string &key_endpoint,
                          const CurveKeys &keys, std::string *err) {
  const CurvePeer *p = find_curve_peer(keys.peers, key_endpoint);
  if (!p) {
    *err = no_curve_key_error(key_endpoint, keys.peers_dir);
    return false;
  }
  s.set(zmq::sockopt::curve_publickey, keys.public_key);
  s.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  s.set(zmq::sockopt::curve_serverkey, p->public_key);  // makes the next connect a client's
  s.connect(endpoint);
  return true;
}

CurveAuthPtr configure_curve(const std::string &key_file, const std::string &peers_dir, zmq::context_t &ctx,
                             zmq::socket_t &pub, zmq::socket_t &sub, std::vector<CurvePeer> *peers, std::string *err) {
  CurveKeys keys;
  if (!load_curve_keys(key_file, peers_dir, &keys, err)) return nullptr;
  *peers = keys.peers;
  CurveAuthPtr auth = start_curve_auth(ctx, keys.peers, "a subscriber");
  make_curve_server(pub, keys);
  sub.set(zmq::sockopt::curve_publickey, keys.public_key);
  sub.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  return auth;
}

bool connect_curve_peer(zmq::socket_t &sub, const std::string &endpoint, const std::vector<CurvePeer> &peers,
                        const std::string &peers_dir, std::string *err) {
  const CurvePeer *p = find_curve_peer(peers, endpoint);
  if (!p) {
    *err = no_curve_key_error(endpoint, peers_dir);
    return false;
  }
  sub.set(zmq::sockopt::curve_serverkey, p->public_key);
  sub.connect(endpoint);
  return true;
}

}  // namespace dt
