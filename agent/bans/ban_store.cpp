// ban_store.cpp - the bans in the pinned maps (ban_store.h).
#include "bans/ban_store.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/address.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/runtime_files.h"
#include "dataplane/features.h"
#include "dataplane/map_reader.h"
#include "dataplane/pin_layout.h"

namespace dt {
namespace {

constexpr const char *kBansLockFile = ".bans";  // flock()ed around every change; holds the generation

std::string errno_text(int e) { return strerror(e); }

// The trie key of `p` in its family's map: struct dt_ban_key4 or struct dt_lpm_key.
struct TrieKey {
  dt_ban_key4 k4{};
  dt_lpm_key k6{};
  bool v6;
  explicit TrieKey(const BanPrefix &p) : v6(p.is_v6) {
    k6.prefixlen = k4.prefixlen = p.len;
    memcpy(k6.addr, p.addr, 16);
    memcpy(k4.addr, &p.addr[12], 4);
  }
  const void *key() const { return v6 ? static_cast<const void *>(&k6) : &k4; }
};

Ban ban_from_info(const dt_ban_info &info, uint32_t slot) {
  Ban b;
  memcpy(b.prefix.addr, info.addr, 16);
  b.prefix.len = info.prefixlen;
  b.prefix.is_v6 = info.is_v6;
  b.expires_ns = info.expires_ns;
  b.set_unix_ms = info.set_unix_ms;
  b.reason.assign(info.reason, strnlen(info.reason, sizeof info.reason));
  b.origin.assign(info.origin, strnlen(info.origin, sizeof info.origin));
  b.who.assign(info.who, strnlen(info.who, sizeof info.who));
  b.remote = info.remote;
  b.slot = slot;
  return b;
}

void copy_text(char *dst, size_t cap, const std::string &s) {
  memset(dst, 0, cap);
  memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

dt_ban_info info_from_ban(const Ban &b) {
  dt_ban_info info{};
  memcpy(info.addr, b.prefix.addr, 16);
  info.prefixlen = b.prefix.len;
  info.is_v6 = b.prefix.is_v6;
  info.remote = b.remote;
  info.expires_ns = b.expires_ns;
  info.set_unix_ms = b.set_unix_ms;
  copy_text(info.reason, sizeof info.reason, b.reason);
  copy_text(info.origin, sizeof info.origin, b.origin);
  copy_text(info.who, sizeof info.who, b.who);
  return info;
}

// A slot to start probing from: spread by the prefix, so that free slots are near.
uint32_t slot_hint(const BanPrefix &p) {
  uint32_t h = 2166136261u;
  for (uint8_t c : p.addr) h = (h ^ c) * 16777619u;
  return (h ^ p.len) % DT_MAX_BANS;
}

}  // namespace

BanStore::~BanStore() {
  if (owned_)
    for (int fd : {fds_.v4, fds_.v6, fds_.info, fds_.counts, fds_.features})
      if (fd >= 0) close(fd);
  if (lock_fd_ >= 0) close(lock_fd_);
}

std::unique_ptr<BanStore> BanStore::open(const std::string &pin_dir, std::string *err) {
  std::unique_ptr<BanStore> s(new BanStore());
  s->owned_ = true;
  struct {
    int *fd;
    const char *name;
  } maps[] = {{&s->fds_.v4, DT_MAP_BANS_V4},
              {&s->fds_.v6, DT_MAP_BANS_V6},
              {&s->fds_.info, DT_MAP_BAN_INFO},
              {&s->fds_.counts, DT_MAP_BAN_COUNTS}};
  for (auto &m : maps) {
    const std::string path = pin_dir + "/" + m.name;
    *m.fd = bpf_obj_get(path.c_str());
    if (*m.fd >= 0) continue;
    const int e = errno;
    if (e == ENOENT && access((pin_dir + "/" + DT_MAP_BUCKETS).c_str(), F_OK) == 0)
      *err = "the agent pinned in " + pin_dir + " has no ban maps (layout " + std::to_string(pinned_layout(pin_dir)) +
             "): restart it with this version (its maps are reused, bans added)";
    else if (e == ENOENT)
      *err = "no dthrottle agent pinned in " + pin_dir +
             ": start `agent --iface IFACE` first, or give the --iface "
             "or --pin-dir of the running agent";
    else *err = "cannot open " + path + ": " + errno_text(e) + (e == EPERM || e == EACCES ? " (run as root)" : "");
    return nullptr;
  }
  // Pins of an agent before the features map: its program looks at both tries always.
  s->fds_.features = bpf_obj_get((pin_dir + "/" + DT_MAP_FEATURES).c_str());
  if (s->fds_.features < 0 && errno != ENOENT) {
    *err = "cannot open " + pin_dir + "/" + DT_MAP_FEATURES + ": " + errno_text(errno);
    return nullptr;
  }
  const std::string lock_path = runtime_file(pin_dir, kBansLockFile);
  mkdir(kRuntimeDir, 0755);
  // A runtime file like the others (common/files.h): never through a symlink, and 0640
  // even if an older agent made it 0644.
  s->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, kRuntimeFileMode);
  if (s->lock_fd_ >= 0) fchmod(s->lock_fd_, kRuntimeFileMode);
  if (s->lock_fd_ < 0) {
    *err = "cannot open the bans' lock file " + lock_path + ": " + errno_text(errno) + " (run as root)";
    return nullptr;
  }
  return s;
}

std::unique_ptr<BanStore> BanStore::over(const BanMapFds &fds) {
  std::unique_ptr<BanStore> s(new BanStore());
  s->fds_ = fds;
  return s;
}

bool BanStore::lock(int how) { return lock_fd_ < 0 || flock(lock_fd_, how) == 0; }

void BanStore::unlock() {
  if (lock_fd_ >= 0) flock(lock_fd_, LOCK_UN);
}

uint64_t BanStore::generation() {
  if (lock_fd_ < 0) return generation_;
  char buf[24] = {};
  if (pread(lock_fd_, buf, sizeof buf - 1, 0) <= 0) return 0;
  return strtoull(buf, nullptr, 10);
}

// Under the lock: the next generation, written over the file's.
void BanStore::bump_generation() {
  if (lock_fd_ < 0) {
    generation_++;
    return;
  }
  const std::string next = std::to_string(generation() + 1);
  if (ftruncate(lock_fd_, 0) != 0 || pwrite(lock_fd_, next.data(), next.size(), 0) < 0) {
    // The daemon then notices the change at its next full scan only.
  }
}

std::optional<Ban> BanStore::find_locked(const BanPrefix &prefix) {
  // The longest ban within `prefix`'s length that covers its address: the exact one if any.
  TrieKey key(prefix);
  dt_ban v{};
  if (bpf_map_lookup_elem(trie_fd(prefix), key.key(), &v) != 0) return std::nullopt;
  dt_ban_info info{};
  if (bpf_map_lookup_elem(fds_.info, &v.slot, &info) != 0) return std::nullopt;
  Ban b = ban_from_info(info, v.slot);
  if (!(b.prefix == prefix)) return std::nullopt;
  return b;
}

std::optional<Ban> BanStore::find(const BanPrefix &prefix) {
  if (!lock(LOCK_SH)) return std::nullopt;
  auto b = find_locked(prefix);
  unlock();
  return b;
}

std::optional<Ban> BanStore::covering(const uint8_t *addr) {
  BanPrefix p;
  memcpy(p.addr, addr, 16);
  p.is_v6 = !addr_is_v4(addr);
  p.len = p.is_v6 ? 128 : 32;
  TrieKey key(p);
  dt_ban v{};
  dt_ban_info info{};
  if (bpf_map_lookup_elem(trie_fd(p), key.key(), &v) != 0 || bpf_map_lookup_elem(fds_.info, &v.slot, &info) != 0)
    return std::nullopt;
  Ban b = ban_from_info(info, v.slot);
  dt_ban_counts c{};
  if (sum_per_cpu(fds_.counts, v.slot, &c) == 0) b.dropped = c.dropped, b.would_drop = c.would_drop;
  return b;
}

// Under the lock: a ban of a prefix not banned yet, in a free slot with zeroed counts.
bool BanStore::write_new(Ban ban, std::string *err) {
  dt_ban_info probe{};
  uint32_t slot = slot_hint(ban.prefix);
  uint32_t tries = 0;
  for (; tries < DT_MAX_BANS && bpf_map_lookup_elem(fds_.info, &slot, &probe) == 0; tries++)
    slot = (slot + 1) % DT_MAX_BANS;
  if (tries == DT_MAX_BANS) {
    *err = "the ban maps are full (" + std::to_string(DT_MAX_BANS) + " bans): remove some (agent unban) first";
    return false;
  }
  const int ncpu = libbpf_num_possible_cpus();
  std::vector<dt_ban_counts> zeros(ncpu > 0 ? static_cast<size_t>(ncpu) : 1);
  ban.slot = slot;
  const dt_ban_info info = info_from_ban(ban);
  const dt_ban v{ban.expires_ns, slot, 0};
  TrieKey key(ban.prefix);
  if (bpf_map_update_elem(fds_.counts, &slot, zeros.data(), BPF_ANY) != 0 ||
      bpf_map_update_elem(fds_.info, &slot, &info, BPF_NOEXIST) != 0 ||
      bpf_map_update_elem(trie_fd(ban.prefix), key.key(), &v, BPF_ANY) != 0) {
    const int e = errno;
    bpf_map_delete_elem(fds_.info, &slot);
    *err = "cannot write the ban maps: " + errno_text(e) + (e == ENOSPC || e == E2BIG ? " (they are full)" : "");
    return false;
  }
  return true;
}

bool BanStore::set(const Ban &in, std::string *err) {
  Ban ban = in;
  if (!ban.set_unix_ms) ban.set_unix_ms = unix_now_ms();
  if (!lock(LOCK_EX)) return *err = "cannot lock the bans: " + errno_text(errno), false;
  bool ok;
  if (!announce_locked(ban.prefix, err)) {
    unlock();
    return false;
  }
  if (auto old = find_locked(ban.prefix)) {  // an update: same slot, counts kept
    ban.slot = old->slot;
    const dt_ban_info info = info_from_ban(ban);
    const dt_ban v{ban.expires_ns, ban.slot, 0};
    TrieKey key(ban.prefix);
    ok = bpf_map_update_elem(fds_.info, &ban.slot, &info, BPF_EXIST) == 0 &&
         bpf_map_update_elem(trie_fd(ban.prefix), key.key(), &v, BPF_EXIST) == 0;
    if (!ok) *err = "cannot update the ban maps: " + errno_text(errno);
  } else {
    ok = write_new(ban, err);
  }
  if (ok) bump_generation();
  unlock();
  return ok;
}

// Under the lock, before a ban of p's family is written: its bit in the features map on,
// so that the packet path looks at the trie from the next packet (none to set: pins
// whose program always looks).
bool BanStore::announce_locked(const BanPrefix &p, std::string *err) {
  if (fds_.features < 0) return true;
  const int rc = set_feature_bits(fds_.features, FeatureWord::kBans, p.is_v6 ? DT_FEAT_BANS_V6 : DT_FEAT_BANS_V4, true);
  if (rc != 0) *err = "cannot mark the bans in force in the features map: " + errno_text(-rc);
  return rc == 0;
}

// Under the lock: the trie entry first (packets stop matching), then the description;
// the family's features bit off once its trie is empty (nothing left to look up).
bool BanStore::erase_locked(const Ban &ban) {
  TrieKey key(ban.prefix);
  const bool gone = bpf_map_delete_elem(trie_fd(ban.prefix), key.key()) == 0 || errno == ENOENT;
  bpf_map_delete_elem(fds_.info, &ban.slot);
  const uint32_t bit = ban.prefix.is_v6 ? DT_FEAT_BANS_V6 : DT_FEAT_BANS_V4;
  if (gone && fds_.features >= 0 &&
      !(ban_bits_in_force(ban.prefix.is_v6 ? -1 : fds_.v4, ban.prefix.is_v6 ? fds_.v6 : -1) & bit))
    set_feature_bits(fds_.features, FeatureWord::kBans, bit, false);
  return gone;
}

bool BanStore::remove(const BanPrefix &prefix, bool *found, std::string *err) {
  if (!lock(LOCK_EX)) return *err = "cannot lock the bans: " + errno_text(errno), false;
  auto old = find_locked(prefix);
  *found = old.has_value();
  bool ok = true;
  if (old) {
    ok = erase_locked(*old);
    if (!ok) *err = "cannot remove the ban from the maps: " + errno_text(errno);
    bump_generation();
  }
  unlock();
  return ok;
}

bool BanStore::list(std::vector<Ban> *out, std::string *err, bool with_counts) {
  out->clear();
  if (!lock(LOCK_SH)) return *err = "cannot lock the bans: " + errno_text(errno), false;
  uint32_t key = 0, next = 0;
  const uint32_t *prev = nullptr;
  dt_ban_info info{};
  while (bpf_map_get_next_key(fds_.info, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(fds_.info, &key, &info) != 0) continue;  // removed meanwhile
    Ban b = ban_from_info(info, key);
    dt_ban_counts c{};
    if (with_counts && sum_per_cpu(fds_.counts, key, &c) == 0) b.dropped = c.dropped, b.would_drop = c.would_drop;
    out->push_back(std::move(b));
  }
  unlock();
  return true;
}

size_t BanStore::sweep(uint64_t now_ns) {
  std::vector<Ban> all;
  std::string err;
  if (fds_.features >= 0)  // ORed in only: never clears a bit another store just set
    if (const uint32_t held = ban_bits_in_force(fds_.v4, fds_.v6);
        held & ~feature_bits(fds_.features, FeatureWord::kBans))
      set_feature_bits(fds_.features, FeatureWord::kBans, held, true);
  if (!list(&all, &err, false)) return 0;
  size_t n = 0;
  if (!lock(LOCK_EX)) return 0;
  for (const Ban &b : all) {
    auto cur = find_locked(b.prefix);  // set again meanwhile? then it is not expired
    if (!cur || cur->expires_ns > now_ns) continue;
    erase_locked(*cur);
    n++;
  }
  if (n) bump_generation();
  unlock();
  return n;
}

}  // namespace dt
