// explain_watch.cpp - the daemon's half of `agent explain`.
#include "daemon/explain_watch.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cluster/cluster.h"
#include "common/address.h"
#include "common/files.h"
#include "common/json.h"
#include "common/log.h"
#include "common/program_name.h"
#include "common/runtime_files.h"

namespace dt {

constexpr uint64_t kMaxWindowMs = 10'000;

ExplainWatch::ExplainWatch(const std::string &pin_dir, Cluster *cluster)
    : request_path_(runtime_file(pin_dir, kExplainRequest)),
      answer_path_(runtime_file(pin_dir, kExplainAnswer)),
      cluster_(cluster) {}

void ExplainWatch::on_request(uint64_t now_ns) {
  std::ifstream in(request_path_);
  std::string id, address;
  uint64_t window_ms = 0;
  dt_key key{};
  if (!(in >> id >> address >> window_ms) || !key_from_string(address, &key)) {
    DT_WARN("explain: ignored a request that is not '<id> <address> <window ms>' in %s", request_path_.c_str());
    return;
  }
  id_ = id, address_ = address, window_ms_ = std::min(window_ms, kMaxWindowMs);
  pending_ = true;
  if (!cluster_) return answer(nullptr);
  cluster_->source_watch().start(key.addr, now_ns + window_ms_ * 1'000'000ull);
}

void ExplainWatch::poll(uint64_t now_ns) {
  if (!pending_ || !cluster_ || !cluster_->source_watch().done(now_ns)) return;
  Json peers = Json::array();
  for (const auto &s : cluster_->source_watch().take())
    peers.push_back({{"node", s.node}, {"rule", s.rule}, {"hits", s.hits}, {"reports", s.reports}});
  answer(&peers);
}

// peers: null without a cluster (nobody could have reported the source).
void ExplainWatch::answer(const void *peers) {
  Json j = {{"id", id_}, {"address", address_}, {"cluster", peers != nullptr}};
  if (peers) {
    j["window_ms"] = window_ms_;
    j["peers"] = *static_cast<const Json *>(peers);
  }
  if (std::string err; !write_file_atomic(answer_path_, dump_json(j) + "\n", &err))
    DT_WARN("explain: %s (%s will say the agent did not answer)", err.c_str(), command_name("explain").c_str());
  pending_ = false;
}

}  // namespace dt
