// curve.cpp - key files, the ZAP allowlist handler, keygen.
#include "cluster/curve.h"

#include <dirent.h>
#include <sys/stat.h>
#include <zmq.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "common/endpoint.h"
#include "common/log.h"
#include "common/clock.h"

namespace dt {
namespace {

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  size_t b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool valid_z85_key(const std::string &k) {
  if (k.size() != 40) return false;
  uint8_t raw[32];
  return zmq_z85_decode(raw, k.c_str()) != nullptr;
}

}  // namespace

class CurveAuth {
 public:
  CurveAuth(zmq::context_t &ctx, std::set<std::string> allowed) : ctx_(ctx), allowed_(std::move(allowed)) {
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

 private:
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
          if (allowed_.count(z85)) {
            status = "200";
            text = "OK";
          } else {
            refused_++;
            uint64_t suppressed = 0;
            if (log_limit_.allow(mono_now_ns(), &suppressed))
              DT_WARN("refused a subscriber from %s: its public key %s is not in --curve-peers (%llu refusals so far)",
                      req[3].to_string().c_str(), z85, static_cast<unsigned long long>(refused_));
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
  std::set<std::string> allowed_;
  std::unique_ptr<zmq::socket_t> sock_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  uint64_t refused_ = 0;
  LogLimiter log_limit_{10'000'000'000ull, 3};  // a refused peer retries all the time
};

void destroy_curve_auth(CurveAuth *auth) { delete auth; }

bool read_curve_file(const std::string &path, std::string *pub, std::string *sec, std::string *endpoint,
                     std::string *err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot read " + path + ": " + strerror(errno);
    return false;
  }
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    std::string k = trim(line.substr(0, eq)), v = eq == std::string::npos ? "" : trim(line.substr(eq + 1));
    if (eq == std::string::npos || (k != "public" && k != "secret" && k != "endpoint")) {
      *err = path + ":" + std::to_string(lineno) + ": expected 'public = KEY', 'secret = KEY' or 'endpoint = HOST:PORT'";
      return false;
    }
    if ((k == "public" || k == "secret") && !valid_z85_key(v)) {
      *err = path + ":" + std::to_string(lineno) + ": '" + k + "' is not a 40-character Z85 key";
      return false;
    }
    if (k == "public") *pub = v;
    else if (k == "secret" && sec) *sec = v;
    else if (k == "endpoint" && endpoint && !normalize_endpoint(v, false, endpoint, err)) {
      *err = path + ":" + std::to_string(lineno) + ": " + *err;
      return false;
    }
  }
  if (pub->empty()) {
    *err = path + ": no 'public = KEY' line";
    return false;
  }
  if (sec && sec->empty()) {
    *err = path + ": no 'secret = KEY' line (is this the .pub file? --curve-key takes the .key file)";
    return false;
  }
  return true;
}

bool read_curve_peers(const std::string &dir, std::vector<CurvePeer> *out, std::string *err) {
  DIR *d = opendir(dir.c_str());
  if (!d) {
    *err = "cannot read --curve-peers directory " + dir + ": " + strerror(errno);
    return false;
  }
  bool ok = true;
  while (dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() < 5 || name.compare(name.size() - 4, 4, ".pub") != 0) continue;
    CurvePeer p;
    p.file = dir + "/" + name;
    if (!read_curve_file(p.file, &p.public_key, nullptr, &p.endpoint, err)) {
      ok = false;
      break;
    }
    out->push_back(p);
  }
  closedir(d);
  if (ok && out->empty()) {
    *err = "--curve-peers directory " + dir + " holds no *.pub files: no peer could connect";
    ok = false;
  }
  return ok;
}

CurveAuthPtr configure_curve(const std::string &key_file, const std::string &peers_dir, zmq::context_t &ctx,
                             zmq::socket_t &pub, zmq::socket_t &sub, std::vector<CurvePeer> *peers,
                             std::string *err) {
  std::string my_pub, my_sec;
  if (!read_curve_file(key_file, &my_pub, &my_sec, nullptr, err)) return nullptr;
  if (peers_dir.empty()) {
    *err = "--curve-key needs --curve-peers DIR: the public keys of the peers allowed in";
    return nullptr;
  }
  if (!read_curve_peers(peers_dir, peers, err)) return nullptr;
  std::set<std::string> allowed;
  for (const auto &p : *peers) allowed.insert(p.public_key);
  CurveAuthPtr auth(new CurveAuth(ctx, allowed));
  pub.set(zmq::sockopt::curve_server, 1);
  pub.set(zmq::sockopt::curve_secretkey, my_sec);
  pub.set(zmq::sockopt::zap_domain, "dthrottle");
  sub.set(zmq::sockopt::curve_publickey, my_pub);
  sub.set(zmq::sockopt::curve_secretkey, my_sec);
  return auth;
}

bool connect_curve_peer(zmq::socket_t &sub, const std::string &endpoint, const std::vector<CurvePeer> &peers,
                        const std::string &peers_dir, std::string *err) {
  for (const auto &p : peers) {
    if (p.endpoint == endpoint) {
      sub.set(zmq::sockopt::curve_serverkey, p.public_key);
      sub.connect(endpoint);
      return true;
    }
  }
  *err = "no public key for peer " + endpoint + " in " + peers_dir + ": add its .pub file with the line 'endpoint = " +
         endpoint.substr(6) + "'";
  return false;
}

}  // namespace dt
