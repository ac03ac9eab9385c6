// list_file.cpp - parsing allow and deny list files (list_file.h).
#include "rules/list_file.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/files.h"
#include "common/line_file.h"

namespace dt {
namespace {

// One entry: an address or prefix of either family.
struct Entry {
  bool v6 = false;
  dt_list_v4_key k4{};
  dt_list_v6_key k6{};
};

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The blank-separated words of a line, up to its comment ('#' or ';').
std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_blank(line[i])) i++;
    if (i >= line.size() || line[i] == '#' || line[i] == ';') break;
    const size_t start = i;
    while (i < line.size() && !is_blank(line[i])) i++;
    out.push_back(line.substr(start, i - start));
  }
  return out;
}

// True if no bit of addr[0..bytes) at or past `bits` is set.
bool host_bits_clear(const uint8_t *addr, size_t bytes, unsigned bits) {
  for (size_t i = bits; i < bytes * 8; i++)
    if (addr[i / 8] & (0x80 >> (i % 8))) return false;
  return true;
}

// "198.18.0.0/24" or "2001:2::1" into *e; false with *why.
bool parse_entry(std::string_view word, Entry *e, std::string *why) {
  const std::string w(word);
  const size_t dash = w.find('-');
  uint8_t probe[16];
  if (dash != std::string::npos && (inet_pton(AF_INET, w.substr(0, dash).c_str(), probe) == 1 ||
                                    inet_pton(AF_INET6, w.substr(0, dash).c_str(), probe) == 1))
    return *why = "'" + w + "': ranges are not supported; give the range as prefixes (e.g. with `ipcalc`)", false;
  const size_t slash = w.find('/');
  const std::string addr = w.substr(0, slash);
  int max = 32;
  uint8_t *bytes = e->k4.addr;
  if (inet_pton(AF_INET, addr.c_str(), e->k4.addr) != 1) {
    if (inet_pton(AF_INET6, addr.c_str(), e->k6.addr) != 1)
      return *why = "'" + w + "' is not an IPv4 or IPv6 address or prefix", false;
    e->v6 = true, max = 128, bytes = e->k6.addr;
  }
  int bits = max;
  if (slash != std::string::npos) {
    const std::string len = w.substr(slash + 1);
    bool digits = !len.empty() && len.size() <= 3;
    for (char c : len) digits = digits && c >= '0' && c <= '9';
    bits = digits ? std::stoi(len) : -1;
    if (bits < 0 || bits > max)
      return *why = "'" + w + "': the prefix length must be 0 to " + std::to_string(max), false;
  }
  if (!host_bits_clear(bytes, max / 8, static_cast<unsigned>(bits)))
    return *why = "'" + w + "' has bits set past its /" + std::to_string(bits) +
                  " (did you mean the network address?)", false;
  (e->v6 ? e->k6.prefixlen : e->k4.prefixlen) = static_cast<uint32_t>(bits);
  return true;
}

// One line's words: an entry (true, *has = true), nothing to add (true, *has = false:
// an ipset header), or false with *why.
bool parse_words(const std::vector<std::string_view> &w, Entry *e, bool *has, std::string *why) {
  *has = false;
  if (w.empty()) return true;
  if (w[0] == "create") return true;  // `ipset save`: the set's header
  if (w[0] == "add") {
    if (w.size() < 3) return *why = "an ipset line needs `add SETNAME PREFIX`", false;
    if (w.size() > 3)
      return *why = "ipset entry options ('" + std::string(w[3]) +
                    "' ...) are not supported: give the prefix alone (`add SETNAME PREFIX`)", false;
    return *has = true, parse_entry(w[2], e, why);
  }
  if (w.size() > 1)
    return *why = "one address or prefix a line (found '" + std::string(w[1]) + "' after '" + std::string(w[0]) +
                  "'; comments start with # or ;)", false;
  return *has = true, parse_entry(w[0], e, why);
}

template <class K>
bool key_less(const K &a, const K &b) {
  if (int c = memcmp(a.addr, b.addr, sizeof a.addr); c != 0) return c < 0;
  return a.prefixlen < b.prefixlen;
}

template <class K>
bool key_equal(const K &a, const K &b) {
  return a.prefixlen == b.prefixlen && memcmp(a.addr, b.addr, sizeof a.addr) == 0;
}

template <class K>
void sort_unique(std::vector<K> *v) {
  std::sort(v->begin(), v->end(), key_less<K>);
  v->erase(std::unique(v->begin(), v->end(), key_equal<K>), v->end());
}

}  // namespace

bool parse_list_text(const std::string &text, const std::string &origin, ListPrefixes *out, std::string *err) {
  ListPrefixes p;
  std::string_view rest(text);
  for (int number = 1; !rest.empty(); number++) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    Entry e;
    bool has = false;
    std::string why;
    if (!parse_words(words_of(line), &e, &has, &why))
      return *err = origin + ":" + std::to_string(number) + ": " + why, false;
    if (has && e.v6) p.v6.push_back(e.k6);
    else if (has) p.v4.push_back(e.k4);
  }
  sort_unique(&p.v4);
  sort_unique(&p.v6);
  if (p.v4.size() > DT_LIST_MAX_PREFIXES || p.v6.size() > DT_LIST_MAX_PREFIXES)
    return *err = origin + ": more than " + std::to_string(DT_LIST_MAX_PREFIXES) +
                  " prefixes of one family (the most one list holds per family)", false;
  *out = std::move(p);
  return true;
}

bool load_list_file(const std::string &path, ListPrefixes *out, std::string *err) {
  std::string text;
  ReadFailure failure;
  // Whoever may write a list file may allow or deny any source.
  if (!check_trusted_path(path, "a list file", false, err)) return false;
  if (!read_text_file(path, &text, &failure))
    return *err = "cannot " + std::string(failure.step) + " list file " + path + ": " + failure.reason, false;
  return parse_list_text(text, path, out, err);
}

std::string list_prefix_string(const dt_list_v4_key &k) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, k.addr, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(k.prefixlen);
}

std::string list_prefix_string(const dt_list_v6_key &k) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, k.addr, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(k.prefixlen);
}

}  // namespace dt
