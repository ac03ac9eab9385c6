// peers_file.cpp - the peers file parsed, and peer list changes in words.
#include "common/peers_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "common/endpoint.h"

namespace dt {
namespace {

std::string trim(const std::string &s) {
  const size_t a = s.find_first_not_of(" \t\r");
  const size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A line without its comment: '#' at the start or after a blank.
std::string strip_comment(const std::string &line) {
  for (size_t i = 0; i < line.size(); i++)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  return line;
}

std::string list_of(const std::vector<std::string> &eps) {
  std::string s;
  for (const auto &e : eps) s += (s.empty() ? "" : ", ") + (e.rfind("tcp://", 0) == 0 ? e.substr(6) : e);
  return s;
}

}  // namespace

bool parse_peers_text(const std::string &text, const std::string &path, std::vector<std::string> *out,
                      std::string *err) {
  std::set<std::string> seen(out->begin(), out->end());
  std::istringstream in(text);
  std::string line;
  for (int lineno = 1; std::getline(in, line); lineno++) {
    const std::string v = trim(strip_comment(line));
    if (v.empty()) continue;
    std::string ep, e;
    if (v.find_first_of(" \t,") != std::string::npos) e = "'" + v + "': one HOST:PORT a line";
    else normalize_endpoint(v, false, &ep, &e);
    if (!e.empty()) {
      *err = path + ":" + std::to_string(lineno) + ": " + e;
      return false;
    }
    if (seen.insert(ep).second) out->push_back(ep);
  }
  return true;
}

bool read_peers_file(const std::string &path, std::vector<std::string> *out, std::string *err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot read the peers file " + path + ": " + strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *err = "cannot read the peers file " + path + ": " + strerror(errno);
    return false;
  }
  return parse_peers_text(text.str(), path, out, err);
}

PeersChange diff_peers(const std::vector<std::string> &prev, const std::vector<std::string> &next) {
  const std::set<std::string> p(prev.begin(), prev.end()), n(next.begin(), next.end());
  PeersChange c;
  for (const auto &e : next)
    if (!p.count(e)) c.added.push_back(e);
  for (const auto &e : prev)
    if (!n.count(e)) c.removed.push_back(e);
  c.total = n.size();
  return c;
}

std::string describe_peers_change(const PeersChange &c) {
  std::string s = "peers: ";
  if (c.added.empty() && c.removed.empty()) s += "unchanged";
  if (!c.added.empty()) s += std::to_string(c.added.size()) + " added (" + list_of(c.added) + ")";
  if (!c.removed.empty())
    s += std::string(c.added.empty() ? "" : ", ") + std::to_string(c.removed.size()) + " removed (" +
         list_of(c.removed) + ")";
  return s + "; " + std::to_string(c.total) + (c.total == 1 ? " peer" : " peers");
}

}  // namespace dt
