// peers_file.h - `--peers-file PATH`: the cluster's peers, one HOST:PORT a line, re-read on
// SIGHUP and `agent reload`; and the difference between two peer lists, said in words.
//
//   # edge hosts of rack 3
//   198.18.1.2:7700
//   edge-4.example.net:7700    # a DNS name: resolved again on every reload
//   [2001:2::5]:7700
#pragma once

#include <string>
#include <vector>

namespace dt {

// Parses the text of a peers file: each line one endpoint in the grammar of --peers
// (normalize_endpoint: HOST:PORT, [V6]:PORT, tcp:// accepted), '#' starts a comment (at
// the start of a line or after a space), blank lines are ignored, repeats are dropped.
// Appends the normalised endpoints (tcp://host:port) to *out. False with
// "PATH:LINE: what is wrong" in *err.
bool parse_peers_text(const std::string &text, const std::string &path, std::vector<std::string> *out,
                      std::string *err);

// Reads the file at `path`, then parse_peers_text.
bool read_peers_file(const std::string &path, std::vector<std::string> *out, std::string *err);

// What a membership change did: the endpoints added and removed (tcp://host:port).
struct PeersChange {
  std::vector<std::string> added, removed;
  size_t total = 0;               // peers after the change
  size_t verified_withdrawn = 0;  // verified sources of the removed peers deleted (Cluster::update_peers)
};

// The endpoints of `next` not in `prev` and those of `prev` not in `next`.
PeersChange diff_peers(const std::vector<std::string> &prev, const std::vector<std::string> &next);

// "peers: 1 added (198.18.1.4:7700), 1 removed (198.18.1.3:7700); 3 peers", or
// "peers: unchanged; 3 peers".
std::string describe_peers_change(const PeersChange &c);

}  // namespace dt
