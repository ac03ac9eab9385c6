// list_file.cpp - parsing allow and deny list files (list_file.h).
#include "rules/list_file.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "common/files.h"

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
    return *why = "'" + w + "' has bits set past its /" + std::to_string(bits) + " (did you mean the network address?)",
           false;
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
                    "' ...) are not supported: give the prefix alone (`add SETNAME PREFIX`)",
             false;
    return *has = true, parse_entry(w[2], e, why);
  }
  if (w.size() > 1)
    return *why = "one address or prefix a line (found '" + std::string(w[1]) + "' after '" + std::string(w[0]) +
                  "'; comments start with # or ;)",
           false;
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

// Lines in, entries counted as they come: a file over the cap is refused at the line
// that passes it, before the rest is read.
class ListReader {
 public:
  ListReader(const std::string &origin, size_t max_entries) : origin_(origin), max_(max_entries) {}

  // One line (without its '\n'); false with *err = "ORIGIN:LINE: what is wrong".
  bool line(std::string_view text, std::string *err) {
    number_++;
    if (text.size() > kMaxListLineBytes)
      return fail("a line of more than " + std::to_string(kMaxListLineBytes) + " bytes", err);
    Entry e;
    bool has = false;
    std::string why;
    if (!parse_words(words_of(text), &e, &has, &why)) return fail(why, err);
    if (!has) return true;
    if (p_.size() >= max_) return fail("more than " + std::to_string(max_) + " entries; " + list_cap_text(), err);
    if (e.v6) p_.v6.push_back(e.k6);
    else p_.v4.push_back(e.k4);
    return true;
  }

  void finish(ListPrefixes *out) {
    sort_unique(&p_.v4);
    sort_unique(&p_.v6);
    p_.v4.shrink_to_fit();
    p_.v6.shrink_to_fit();
    *out = std::move(p_);
  }

 private:
  bool fail(const std::string &why, std::string *err) const {
    return *err = origin_ + ":" + std::to_string(number_) + ": " + why, false;
  }

  std::string origin_;
  size_t max_;
  int number_ = 0;
  ListPrefixes p_;
};

}  // namespace

std::string list_cap_text() {
  return "the allow and deny lists hold at most " + std::to_string(kListsMaxPrefixes) +
         " prefixes together (both families, duplicates counted), the most the unit's MemoryMax= is sized for";
}

bool parse_list_text(const std::string &text, const std::string &origin, ListPrefixes *out, std::string *err,
                     size_t max_entries) {
  ListReader reader(origin, max_entries);
  std::string_view rest(text);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    if (!reader.line(rest.substr(0, nl), err)) return false;
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  reader.finish(out);
  return true;
}

namespace {

// Feeds the lines of `f` to `reader` a chunk at a time; false at the first line it refuses.
bool read_lines(FILE *f, ListReader *reader, std::string *err) {
  std::string pending;  // the start of a line the last chunk cut
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    std::string_view chunk(buf, n);
    for (size_t nl; (nl = chunk.find('\n')) != std::string_view::npos; chunk.remove_prefix(nl + 1)) {
      pending.append(chunk.substr(0, nl));
      if (!reader->line(pending, err)) return false;
      pending.clear();
    }
    // No more of a line than the cap and one byte is kept: a longer one is refused.
    const size_t room = kMaxListLineBytes + 1 - std::min(pending.size(), kMaxListLineBytes + 1);
    pending.append(chunk.substr(0, std::min(chunk.size(), room)));
    if (pending.size() > kMaxListLineBytes) return reader->line(pending, err);
  }
  return pending.empty() || reader->line(pending, err);
}

}  // namespace

bool load_list_file(const std::string &path, ListPrefixes *out, std::string *err, size_t max_entries) {
  // Whoever may write a list file may allow or deny any source.
  if (!check_trusted_path(path, "a list file", false, err)) return false;
  FILE *f = fopen(path.c_str(), "re");
  if (!f) return *err = "cannot open list file " + path + ": " + strerror(errno), false;
  ListReader reader(path, max_entries);
  const bool ok = read_lines(f, &reader, err);
  const int read_errno = ferror(f) ? errno : 0;
  fclose(f);
  if (read_errno) return *err = "cannot read list file " + path + ": " + strerror(read_errno), false;
  if (!ok) return false;
  reader.finish(out);
  return true;
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
