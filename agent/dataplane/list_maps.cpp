// list_maps.cpp - building, swapping and reading the list tries (list_maps.h).
#include "dataplane/list_maps.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/address.h"

namespace dt {
namespace {

// An fd closed with its holder.
struct OwnedFd {
  int fd = -1;
  OwnedFd() = default;
  OwnedFd(const OwnedFd &) = delete;
  OwnedFd &operator=(const OwnedFd &) = delete;
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
};

// A fresh trie holding `keys` (none for an empty list): 0 or -errno.
template <class K>
int build_trie(const std::vector<K> &keys, const char *name, OwnedFd *out) {
  if (keys.empty()) return 0;
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
  out->fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, name, sizeof(K), sizeof(dt_list_value),
                           static_cast<uint32_t>(keys.size()), &opts);
  if (out->fd < 0) return -errno;
  const dt_list_value one = 1;
  for (const K &k : keys)
    if (bpf_map_update_elem(out->fd, &k, &one, BPF_NOEXIST) != 0) return -errno;
  return 0;
}

// Slot `list` of outer map `outer` set to `trie` (emptied for -1): 0 or -errno.
int set_slot(int outer, uint32_t list, int trie) {
  if (outer < 0) return trie < 0 ? 0 : -EBADF;
  if (trie >= 0) return bpf_map_update_elem(outer, &list, &trie, BPF_ANY) == 0 ? 0 : -errno;
  if (bpf_map_delete_elem(outer, &list) == 0 || errno == ENOENT) return 0;
  return -errno;
}

// A list's tries, built and not in force yet.
struct BuiltList {
  OwnedFd v4, v6;
};

int build_list(uint32_t list, const ListPrefixes &p, BuiltList *out) {
  const bool allow = list == DT_LIST_ALLOW;
  if (int rc = build_trie(p.v4, allow ? "dt_allow_v4" : "dt_deny_v4", &out->v4); rc != 0) return rc;
  return build_trie(p.v6, allow ? "dt_allow_v6" : "dt_deny_v6", &out->v6);
}

int swap_in(const ListMapFds &m, uint32_t list, const BuiltList &b) {
  if (int rc = set_slot(m.v4, list, b.v4.fd); rc != 0) return rc;
  return set_slot(m.v6, list, b.v6.fd);
}

// max_entries of the trie in slot `list` of `outer` (0: none).
uint32_t slot_size(int outer, uint32_t list) {
  uint32_t id = 0;
  if (outer < 0 || bpf_map_lookup_elem(outer, &list, &id) != 0) return 0;
  const int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) return 0;
  bpf_map_info info{};
  uint32_t len = sizeof info;
  const int rc = bpf_obj_get_info_by_fd(fd, &info, &len);
  close(fd);
  return rc == 0 ? info.max_entries : 0;
}

template <class K>
bool keys_equal(const std::vector<K> &a, const std::vector<K> &b) {
  auto same = [](const K &x, const K &y) { return x.prefixlen == y.prefixlen && !memcmp(x.addr, y.addr, sizeof x.addr); };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same);
}

}  // namespace

bool ListPrefixes::operator==(const ListPrefixes &o) const { return keys_equal(v4, o.v4) && keys_equal(v6, o.v6); }

const char *list_name(uint32_t list) { return list == DT_LIST_ALLOW ? "allow" : "deny"; }

int publish_list(const ListMapFds &m, uint32_t list, const ListPrefixes &next) {
  BuiltList b;
  if (int rc = build_list(list, next, &b); rc != 0) return rc;
  return swap_in(m, list, b);
}

int publish_lists(const ListMapFds &m, const ListPrefixes &allow, const ListPrefixes &deny,
                  const ListPrefixes *prev_allow, const ListPrefixes *prev_deny, std::string *err) {
  const bool allow_same = prev_allow && *prev_allow == allow, deny_same = prev_deny && *prev_deny == deny;
  BuiltList a, d;
  int rc = allow_same ? 0 : build_list(DT_LIST_ALLOW, allow, &a);
  if (rc != 0) return *err = std::string("cannot load the allow list into the kernel: ") + strerror(-rc), rc;
  rc = deny_same ? 0 : build_list(DT_LIST_DENY, deny, &d);
  if (rc != 0) return *err = std::string("cannot load the deny list into the kernel: ") + strerror(-rc), rc;
  if (!allow_same) rc = swap_in(m, DT_LIST_ALLOW, a);
  if (rc == 0 && !deny_same) rc = swap_in(m, DT_LIST_DENY, d);
  if (rc != 0) *err = std::string("cannot swap the new lists in: ") + strerror(-rc);
  return rc;
}

ListSize read_list_size(const ListMapFds &m, uint32_t list) {
  return ListSize{slot_size(m.v4, list), slot_size(m.v6, list)};
}

int list_holds(const ListMapFds &m, uint32_t list, const uint8_t *addr) {
  const bool v4 = addr_is_v4(addr);
  uint32_t id = 0;
  if ((v4 ? m.v4 : m.v6) < 0 || bpf_map_lookup_elem(v4 ? m.v4 : m.v6, &list, &id) != 0) return 0;
  const int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) return -errno;
  dt_list_value v = 0;
  int rc;
  if (v4) {
    dt_list_v4_key k{32, {}};
    memcpy(k.addr, addr + 12, 4);
    rc = bpf_map_lookup_elem(fd, &k, &v);
  } else {
    dt_list_v6_key k{128, {}};
    memcpy(k.addr, addr, 16);
    rc = bpf_map_lookup_elem(fd, &k, &v);
  }
  const int saved = errno;
  close(fd);
  return rc == 0 ? 1 : (saved == ENOENT ? 0 : -saved);
}

}  // namespace dt
