// list_maps.cpp - building, swapping and reading the lists' range sets (list_maps.h).
#include "dataplane/list_maps.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/address.h"
#include "common/no_copy.h"
#include "dataplane/features.h"
#include "dataplane/range_set.h"

namespace dt {
namespace {

// An fd closed with its holder.
struct OwnedFd : NoCopy {
  int fd = -1;
  OwnedFd() = default;
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
};

// A map's elements mapped into memory (BPF_F_MMAPABLE), unmapped with their holder.
struct Mapped : NoCopy {
  void *p = MAP_FAILED;
  size_t len = 0;
  Mapped(int fd, size_t bytes, bool write) : len((bytes + 4095) & ~size_t{4095}) {
    if (len > 0) p = mmap(nullptr, len, write ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  }
  ~Mapped() {
    if (p != MAP_FAILED) munmap(p, len);
  }
};

// A fresh range set holding `keys` (none for an empty list): made with exactly its elements
// and written through a mapping of its memory, in one copy. 0 or -errno.
template <class K>
int build_set(const std::vector<K> &keys, const char *name, OwnedFd *out) {
  if (keys.empty()) return 0;
  const auto elems = build_range_set(keys);
  using E = typename decltype(elems)::value_type;
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
  out->fd =
      bpf_map_create(BPF_MAP_TYPE_ARRAY, name, sizeof(uint32_t), sizeof(E), static_cast<uint32_t>(elems.size()), &opts);
  if (out->fd < 0) return -errno;
  Mapped m(out->fd, elems.size() * sizeof(E), true);
  if (m.p == MAP_FAILED) return -errno;
  memcpy(m.p, elems.data(), elems.size() * sizeof(E));
  return 0;
}

// Slot `list` of outer map `outer` set to the map `set` (emptied for -1): 0 or -errno.
int set_slot(int outer, uint32_t list, int set) {
  if (outer < 0) return set < 0 ? 0 : -EBADF;
  if (set >= 0) return bpf_map_update_elem(outer, &list, &set, BPF_ANY) == 0 ? 0 : -errno;
  if (bpf_map_delete_elem(outer, &list) == 0 || errno == ENOENT) return 0;
  return -errno;
}

// A list's sets, built and not in force yet.
struct BuiltList {
  OwnedFd v4, v6;
};

int build_list(uint32_t list, const ListPrefixes &p, BuiltList *out) {
  const bool allow = list == DT_LIST_ALLOW;
  if (int rc = build_set(p.v4, allow ? "dt_allow_v4" : "dt_deny_v4", &out->v4); rc != 0) return rc;
  return build_set(p.v6, allow ? "dt_allow_v6" : "dt_deny_v6", &out->v6);
}

// Slot `list` of the family's outer map set to `set` (emptied for -1), its bit in the
// features map kept true: on before a set goes in, off once the slot is empty. 0 or -errno.
int set_slot_announced(const ListMapFds &m, uint32_t list, int is_v6, int set) {
  const int outer = is_v6 ? m.v6 : m.v4;
  const uint32_t bit = DT_FEAT_LIST(list, is_v6);
  if (set >= 0 && m.features >= 0)
    if (int rc = set_feature_bits(m.features, FeatureWord::kLists, bit, true); rc != 0) return rc;
  if (int rc = set_slot(outer, list, set); rc != 0) return rc;
  if (set < 0 && m.features >= 0) return set_feature_bits(m.features, FeatureWord::kLists, bit, false);
  return 0;
}

int swap_in(const ListMapFds &m, uint32_t list, const BuiltList &b) {
  if (int rc = set_slot_announced(m, list, 0, b.v4.fd); rc != 0) return rc;
  return set_slot_announced(m, list, 1, b.v6.fd);
}

// The set in slot `list` of `outer`, opened (fd -1: none) with its element count.
struct SlotSet {
  OwnedFd fd;
  uint32_t elems = 0, id = 0;
  SlotSet(int outer, uint32_t list) {
    if (outer < 0 || bpf_map_lookup_elem(outer, &list, &id) != 0) return;
    fd.fd = bpf_map_get_fd_by_id(id);
    bpf_map_info info{};
    uint32_t len = sizeof info;
    if (fd.fd >= 0 && bpf_obj_get_info_by_fd(fd.fd, &info, &len) == 0) elems = info.max_entries;
  }
};

// Prefixes loaded in the set of slot `list` of `outer` (its header; 0: none).
template <class E>
uint32_t slot_size(int outer, uint32_t list) {
  SlotSet s(outer, list);
  if (s.elems == 0) return 0;
  Mapped m(s.fd.fd, size_t{s.elems} * sizeof(E), false);
  return m.p == MAP_FAILED ? 0 : range_set_prefixes(static_cast<const E *>(m.p), s.elems);
}

// Whether the set of slot `list` of `outer` holds `addr`: 1, 0, -errno.
template <class E, class A>
int slot_holds(int outer, uint32_t list, A addr) {
  SlotSet s(outer, list);
  if (s.id == 0) return 0;
  if (s.fd.fd < 0) return -errno;
  if (s.elems == 0) return 0;
  Mapped m(s.fd.fd, size_t{s.elems} * sizeof(E), false);
  if (m.p == MAP_FAILED) return -errno;
  return range_set_holds(static_cast<const E *>(m.p), s.elems, addr) ? 1 : 0;
}

// The prefixes of the set `fd` (the fewest whose union it holds); false on a read error.
template <class E, class K>
bool set_prefixes(int fd, std::vector<K> *out) {
  bpf_map_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return false;
  if (info.value_size != sizeof(E) || info.max_entries == 0) return errno = EINVAL, false;
  Mapped m(fd, size_t{info.max_entries} * sizeof(E), false);
  if (m.p == MAP_FAILED) return false;
  *out = range_prefixes(range_set_ranges(static_cast<const E *>(m.p), info.max_entries));
  if (out->size() > DT_LIST_MAX_PREFIXES) return out->clear(), errno = E2BIG, false;
  return true;
}

}  // namespace

bool read_set_prefixes(int fd, std::vector<dt_list_v4_key> *out) { return set_prefixes<dt_list_v4_elem>(fd, out); }
bool read_set_prefixes(int fd, std::vector<dt_list_v6_key> *out) { return set_prefixes<dt_list_v6_elem>(fd, out); }

namespace {

template <class K>
bool keys_equal(const std::vector<K> &a, const std::vector<K> &b) {
  auto same = [](const K &x, const K &y) {
    return x.prefixlen == y.prefixlen && !memcmp(x.addr, y.addr, sizeof x.addr);
  };
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
  return ListSize{slot_size<dt_list_v4_elem>(m.v4, list), slot_size<dt_list_v6_elem>(m.v6, list)};
}

int list_holds(const ListMapFds &m, uint32_t list, const uint8_t *addr) {
  if (addr_is_v4(addr)) return slot_holds<dt_list_v4_elem>(m.v4, list, addr4_of(addr + 12));
  return slot_holds<dt_list_v6_elem>(m.v6, list, addr6_of(addr));
}

}  // namespace dt
