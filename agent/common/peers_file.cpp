// peers_file.cpp - the peers file parsed, and peer list changes in words.
#include "common/peers_file.h"

#include <set>

#include "common/endpoint.h"
#include "common/line_file.h"

namespace dt {
namespace {

std::string list_of(const std::vector<std::string> &eps) {
  std::string s;
  for (const auto &e : eps) s += (s.empty() ? "" : ", ") + (e.rfind("tcp://", 0) == 0 ? e.substr(6) : e);
  return s;
}

}  // namespace

bool parse_peers_text(const std::string &text, const std::string &path, std::vector<std::string> *out,
                      std::string *err) {
  std::set<std::string> seen(out->begin(), out->end());
  for (const FileLine &line : content_lines(text, Comments::AfterBlank)) {
    const std::string &v = line.text;
    std::string ep, e;
    if (v.find_first_of(" \t,") != std::string::npos) e = "'" + v + "': one HOST:PORT a line";
    else normalize_endpoint(v, false, &ep, &e);
    if (!e.empty()) {
      *err = path + ":" + std::to_string(line.number) + ": " + e;
      return false;
    }
    if (seen.insert(ep).second) out->push_back(ep);
  }
  return true;
}

bool read_peers_file(const std::string &path, std::vector<std::string> *out, std::string *err) {
  std::string text;
  ReadFailure failed;
  if (!read_text_file(path, &text, &failed)) {
    *err = "cannot read the peers file " + path + ": " + failed.reason;
    return false;
  }
  return parse_peers_text(text, path, out, err);
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
