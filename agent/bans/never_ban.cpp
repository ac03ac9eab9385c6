// never_ban.cpp - the addresses no peer's or bouncer's ban may cover (never_ban.h).
#include "bans/never_ban.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/address.h"
#include "dthrottle/lists.h"

namespace dt {
namespace {

// `addr` (N bytes) with the bits past `len` cleared.
template <size_t N>
void mask_to(const uint8_t *addr, unsigned len, uint8_t *out) {
  for (size_t i = 0; i < N; i++) {
    const unsigned first = static_cast<unsigned>(i * 8);
    out[i] = first >= len       ? 0
             : len - first >= 8 ? addr[i]
                                : static_cast<uint8_t>(addr[i] & (0xff << (8 - (len - first))));
  }
}

template <class K>
bool key_less(const K &a, const K &b) {
  if (int c = memcmp(a.addr, b.addr, sizeof a.addr); c != 0) return c < 0;
  return a.prefixlen < b.prefixlen;
}

// Whether the sorted list `keys` (list_file.h's order) holds a prefix overlapping the
// prefix net/len: one within it (its address in net's range), or one covering it.
template <class K>
bool list_overlaps(const std::vector<K> &keys, const uint8_t *net, unsigned len, K *hit) {
  constexpr size_t N = sizeof(K{}.addr);
  K probe{};
  memcpy(probe.addr, net, N);
  auto it = std::lower_bound(keys.begin(), keys.end(), probe, key_less<K>);
  if (it != keys.end()) {
    uint8_t masked[N];
    mask_to<N>(it->addr, len, masked);
    if (memcmp(masked, net, N) == 0) return *hit = *it, true;
  }
  for (unsigned l = 0; l < len; l++) {
    probe.prefixlen = l;
    mask_to<N>(net, l, probe.addr);
    if (std::binary_search(keys.begin(), keys.end(), probe, key_less<K>)) return *hit = probe, true;
  }
  return false;
}

BanPrefix host_prefix(const uint8_t *addr) {
  BanPrefix p;
  memcpy(p.addr, addr, 16);
  p.is_v6 = !addr_is_v4(addr);
  p.len = p.is_v6 ? 128 : 32;
  return p;
}

}  // namespace

void NeverBan::set_cluster(const std::vector<dt_exempt_key> &keys) {
  std::vector<BanPrefix> next;
  static const uint8_t kZero[16] = {};
  for (const dt_exempt_key &k : keys) {
    BanPrefix p = host_prefix(k.addr);
    if (memcmp(k.addr, kZero, 16) == 0 || (!p.is_v6 && memcmp(&k.addr[12], kZero, 4) == 0)) continue;  // any
    next.push_back(p);
  }
  std::sort(next.begin(), next.end());
  next.erase(std::unique(next.begin(), next.end()), next.end());
  cluster_ = std::move(next);
}

namespace {

// The text of an allow list's prefix (its length may be 0).
template <class K>
std::string list_key_text(const K &k, bool v6) {
  BanPrefix h;
  memcpy(v6 ? h.addr : &h.addr[12], k.addr, sizeof k.addr);
  if (!v6) h.addr[10] = h.addr[11] = 0xff;
  h.is_v6 = v6;
  h.len = static_cast<uint8_t>(k.prefixlen);
  if (h.len == 0) return v6 ? "::/0" : "0.0.0.0/0";
  return ban_prefix_text(h);
}

}  // namespace

bool NeverBan::overlaps(const BanPrefix &p, std::string *what) const {
  BanPrefix probe = p;
  probe.len = 0;
  const auto it = std::lower_bound(cluster_.begin(), cluster_.end(), probe);
  if (it != cluster_.end() && ban_prefix_covers(p, it->addr)) {
    *what = "peer or hub " + ban_prefix_text(*it);
    return true;
  }
  if (!allow_) return false;
  if (p.is_v6) {
    dt_list_v6_key hit{};
    if (!list_overlaps(allow_->v6, p.addr, p.len, &hit)) return false;
    *what = "allow list " + list_key_text(hit, true);
    return true;
  }
  dt_list_v4_key hit{};
  if (!list_overlaps(allow_->v4, &p.addr[12], p.len, &hit)) return false;
  *what = "allow list " + list_key_text(hit, false);
  return true;
}

namespace {

// Every key of the hash map `fd`; false on a read error.
template <class K>
bool read_keys(int fd, std::vector<K> *out) {
  out->clear();
  K key{}, next{};
  const K *prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, &next) == 0) {
    out->push_back(next);
    key = next;
    prev = &key;
    if (out->size() > DT_LIST_MAX_PREFIXES) return false;
  }
  return errno == ENOENT;
}

// The allow list's range set of the outer map pinned at `path`: its id (0: none) and, when
// it is not `known_id`, its prefixes into *keys (list_maps.h: read_set_prefixes, merged
// where the file's prefixes overlap or touch). False with *err.
template <class K>
bool read_allow_set(const std::string &path, uint32_t known_id, uint32_t *id, std::vector<K> *keys, bool *changed,
                    std::string *err) {
  *changed = false;
  const int outer = bpf_obj_get(path.c_str());
  if (outer < 0) return *err = "cannot open " + path + ": " + strerror(errno), false;
  const uint32_t slot = DT_LIST_ALLOW;
  uint32_t inner_id = 0;
  if (bpf_map_lookup_elem(outer, &slot, &inner_id) != 0) inner_id = 0;  // no list
  close(outer);
  *id = inner_id;
  if (inner_id == known_id) return true;
  *changed = true;
  keys->clear();
  if (inner_id == 0) return true;
  const int fd = bpf_map_get_fd_by_id(inner_id);
  if (fd < 0) return *err = "cannot open the allow list's set: " + std::string(strerror(errno)), false;
  const bool ok = read_set_prefixes(fd, keys);
  const int saved = errno;
  close(fd);
  if (!ok) *err = "cannot read the allow list's set: " + std::string(strerror(saved));
  return ok;
}

}  // namespace

bool NeverBanPins::refresh(std::string *err) {
  const std::string exempt_path = pin_dir_ + "/" + DT_MAP_CLUSTER_EXEMPT;
  const int exempt = bpf_obj_get(exempt_path.c_str());
  if (exempt < 0) return *err = "cannot open " + exempt_path + ": " + strerror(errno), false;
  std::vector<dt_exempt_key> keys;
  const bool read = read_keys(exempt, &keys);
  close(exempt);
  if (!read) return *err = "cannot read " + exempt_path + ": " + strerror(errno), false;
  uint32_t ids[2] = {0, 0};
  auto allow = std::make_shared<ListPrefixes>();
  bool changed4 = false, changed6 = false;
  if (!read_allow_set(pin_dir_ + "/" + DT_MAP_LISTS_V4, allow_ids_[0], &ids[0], &allow->v4, &changed4, err) ||
      !read_allow_set(pin_dir_ + "/" + DT_MAP_LISTS_V6, allow_ids_[1], &ids[1], &allow->v6, &changed6, err))
    return false;
  set_.set_cluster(keys);
  if (changed4 || changed6) {
    if (!changed4 && allow_) allow->v4 = allow_->v4;
    if (!changed6 && allow_) allow->v6 = allow_->v6;
    allow_ = allow;
    set_.set_allow(allow);
    allow_ids_[0] = ids[0];
    allow_ids_[1] = ids[1];
  }
  return true;
}

}  // namespace dt
