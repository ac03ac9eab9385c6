// explain_watch.h - the daemon's half of `agent explain`: on SIGUSR1 it reads the
// request file (which address, for how long), watches the peers' reports for it
// (cluster/source_watch.h) and writes the answer file, as JSON.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

class Cluster;

class ExplainWatch {
 public:
  ExplainWatch(const std::string &pin_dir, Cluster *cluster);
  // SIGUSR1: a request is waiting. Without a cluster the answer is written at once.
  void on_request(uint64_t now_ns);
  // Writes the answer once the watch's window is over; call every loop turn.
  void poll(uint64_t now_ns);

 private:
  void answer(const void *peers);  // a Json array (json.h stays out of this header), or null
  std::string request_path_, answer_path_;
  Cluster *cluster_;
  std::string id_, address_;
  uint64_t window_ms_ = 0;
  bool pending_ = false;
};

}  // namespace dt
