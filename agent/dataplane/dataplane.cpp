// dataplane.cpp - load, pin, attach, take over, detach.
#include "dataplane/dataplane.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/errno_str.h"
#include "common/files.h"
#include "common/log.h"
#include "common/program_name.h"
#include "common/runtime_files.h"
#include "dataplane/features.h"
#include "dataplane/kernel_probe.h"
#include "dataplane/pin_dir.h"
#include "dataplane/pin_layout.h"
#include "dataplane/policy.h"
#include "dataplane/xdp_multi.h"
#include "dthrottle.skel.h"
#include "dthrottle/common.h"

namespace dt {
namespace {

// A hook program's instance (dt_instance, dt_config.owner): random, never 0 (0 owns none).
uint32_t new_instance() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v)
    v = static_cast<uint32_t>(getpid()) ^ static_cast<uint32_t>(time(nullptr));
  return v ? v : 1;
}

// The interface's MTU, asked of this network namespace (not /sys/class/net, which is the
// namespace's that mounted /sys).
bool read_mtu(const std::string &iface, unsigned *mtu) {
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  ifreq ifr{};
  strncpy(ifr.ifr_name, iface.c_str(), IFNAMSIZ - 1);
  const bool ok = ioctl(s, SIOCGIFMTU, &ifr) == 0;
  close(s);
  if (ok) *mtu = static_cast<unsigned>(ifr.ifr_mtu);
  return ok;
}

bool has_cap(int cap) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

bool check_privileges(std::string *err) {
  // What counts is the effective capability set (root may run with a reduced one).
  if (has_cap(CAP_SYS_ADMIN)) return true;
  std::string missing;
  for (auto [cap, name] :
       {std::pair{CAP_BPF, "CAP_BPF"}, {CAP_NET_ADMIN, "CAP_NET_ADMIN"}, {CAP_PERFMON, "CAP_PERFMON"}})
    if (!has_cap(cap)) missing += (missing.empty() ? "" : ", ") + std::string(name);
  if (missing.empty()) return true;
  *err =
      "permission denied: loading the XDP program needs root or the capabilities CAP_BPF, CAP_NET_ADMIN "
      "and CAP_PERFMON; missing: " +
      missing + " (try sudo)";
  return false;
}

uint32_t xdp_flags_for(XdpMode m) {
  switch (m) {
    case XdpMode::Native: return XDP_FLAGS_DRV_MODE;
    case XdpMode::Generic: return XDP_FLAGS_SKB_MODE;
    case XdpMode::Auto: return 0;
  }
  return 0;
}

std::string attached_prog_desc(int ifindex) {
  uint32_t id = 0;
  return xdp_hook_prog_id(ifindex, &id) && id ? " (program id " + std::to_string(id) + ")" : "";
}

XdpMode query_mode(int ifindex) {
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  if (bpf_xdp_query(ifindex, 0, &q) == 0 && q.attach_mode == XDP_ATTACHED_SKB) return XdpMode::Generic;
  return XdpMode::Native;
}

// The bucket map's size: a pinned map keeps its size (its buckets are reused), and a different
// size asked for with --max-sources is an error rather than a silent reset of every bucket.
bool bucket_map_size(const DataplaneConfig &cfg, uint32_t *max_sources, std::string *err) {
  *max_sources = cfg.max_sources ? cfg.max_sources : DT_DEFAULT_MAX_SOURCES;
  const std::string buckets_pin = cfg.pin_dir + "/" + DT_MAP_BUCKETS;
  const int fd = bpf_obj_get(buckets_pin.c_str());
  if (fd < 0) return true;
  bpf_map_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.max_entries != *max_sources) {
    if (cfg.max_sources_explicit) {
      *err = "the pinned bucket map " + buckets_pin + " holds " + std::to_string(info.max_entries) +
             " sources, not --max-sources " + std::to_string(*max_sources) +
             "; keep its size, or stop the agent without --keep "
             "to remove the pins (this forgets every bucket)";
      close(fd);
      return false;
    }
    *max_sources = info.max_entries;
  }
  close(fd);
  return true;
}

// The verified sources' map (SYN cookies) at --max-verified: a pinned one of another
// size is removed (a cache: its sources are verified again by their next handshake).
void fit_verified_pin(const DataplaneConfig &cfg) {
  const std::string pin = cfg.pin_dir + "/" + DT_MAP_VERIFIED;
  const int fd = bpf_obj_get(pin.c_str());
  if (fd < 0) return;
  bpf_map_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.max_entries != cfg.max_verified) {
    DT_INFO("the verified sources' map %s holds %u, not --max-verified %u: made anew", pin.c_str(), info.max_entries,
            cfg.max_verified);
    unlink(pin.c_str());
  }
  close(fd);
}

// The verified sources' TTL into the syncookie map (its last-sent time starts anew).
int write_syncookie_ttl(int fd, uint64_t ttl_ns) {
  uint32_t zero = 0;
  dt_syncookie sc{};
  sc.verified_ttl_ns = ttl_ns;
  return bpf_map_update_elem(fd, &zero, &sc, BPF_ANY) == 0 ? 0 : -errno;
}

// A new XDP link for prog_fd: in auto mode native first, then generic. Returns the link's fd
// (and its mode in *mode), or -1 with the last attach errno in *last_errno.
int create_xdp_link(const DataplaneConfig &cfg, int prog_fd, int ifindex, XdpMode *mode, int *last_errno) {
  const XdpMode order[2] = {cfg.mode == XdpMode::Generic ? XdpMode::Generic : XdpMode::Native, XdpMode::Generic};
  const int attempts = cfg.mode == XdpMode::Auto ? 2 : 1;
  int lfd = -1;
  for (int i = 0; i < attempts && lfd < 0; i++) {
    LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = xdp_flags_for(order[i]));
    lfd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lo);
    if (lfd >= 0) {
      *mode = order[i];
    } else {
      *last_errno = errno;
      if (*last_errno == EBUSY || *last_errno == EEXIST) break;
      if (i + 1 < attempts)
        DT_WARN("native XDP attach on %s failed (%s); falling back to generic (skb) mode", cfg.iface.c_str(),
                errno_str(*last_errno).c_str());
    }
  }
  return lfd;
}

// Why no link could be created: another program holds the interface, or the mode failed.
std::string attach_error(const DataplaneConfig &cfg, int ifindex, int last_errno) {
  if (last_errno == EBUSY || last_errno == EEXIST)
    return "interface " + cfg.iface + " already has an XDP program attached" + attached_prog_desc(ifindex) +
           "; dthrottle will not replace it. To run beside it: --attach xdp-multi if it runs in libxdp's "
           "dispatcher (loaded with xdp-loader or libxdp), else at tc ingress: --attach tc (attach = ... in a "
           "--config file). If it is stale, detach it with: ip link set dev " +
           cfg.iface + " xdp off";
  return std::string("cannot attach XDP to ") + cfg.iface + " in " + xdp_mode_name(cfg.mode) +
         " mode: " + errno_str(last_errno) + (cfg.mode == XdpMode::Native ? " (try --xdp-mode generic)" : "");
}

// The words of --xdp-mode and --attach: one table each serves the parse and the name.
template <class E>
struct Named {
  E value;
  const char *name;
};
constexpr Named<XdpMode> kXdpModes[] = {
    {XdpMode::Auto, "auto"}, {XdpMode::Native, "native"}, {XdpMode::Generic, "generic"}};
constexpr Named<AttachHook> kAttachHooks[] = {
    {AttachHook::Xdp, "xdp"}, {AttachHook::Tc, "tc"}, {AttachHook::XdpMulti, "xdp-multi"}};

template <class E, size_t N>
bool parse_named(const Named<E> (&table)[N], const std::string &s, E *out) {
  for (const Named<E> &n : table)
    if (s == n.name) return *out = n.value, true;
  return false;
}

template <class E, size_t N>
const char *name_of(const Named<E> (&table)[N], E v) {
  for (const Named<E> &n : table)
    if (n.value == v) return n.name;
  return "?";
}

}  // namespace

bool parse_xdp_mode(const std::string &s, XdpMode *out) { return parse_named(kXdpModes, s, out); }
const char *xdp_mode_name(XdpMode m) { return name_of(kXdpModes, m); }
bool parse_attach_hook(const std::string &s, AttachHook *out) { return parse_named(kAttachHooks, s, out); }
const char *attach_hook_name(AttachHook h) { return name_of(kAttachHooks, h); }

bool xdp_hook_prog_id(int ifindex, uint32_t *id) {
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  if (bpf_xdp_query(ifindex, 0, &q) != 0) return false;
  *id = q.prog_id ? q.prog_id : (q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id);
  return true;
}

uint32_t active_ring_bytes(uint32_t max_sources) {
  const uint64_t need = static_cast<uint64_t>(max_sources) * 32;  // 24-byte event + 8-byte header
  uint64_t bytes = DT_ACTIVE_RING_BYTES;
  while (bytes < need && bytes < (1ull << 30)) bytes <<= 1;
  return static_cast<uint32_t>(bytes);
}

std::unique_ptr<Dataplane> Dataplane::open(const DataplaneConfig &cfg, std::string *err) {
  if (!check_privileges(err)) return nullptr;
  // An old kernel gets a sentence naming what it lacks, not a verifier log.
  if (std::string floor = check_kernel_floor(); !floor.empty()) {
    *err = floor;
    return nullptr;
  }
  const int ifindex = static_cast<int>(if_nametoindex(cfg.iface.c_str()));
  if (ifindex == 0) {
    *err = "unknown interface '" + cfg.iface + "' (see `ip link` for the interfaces here)";
    return nullptr;
  }
  if (!ensure_bpffs(cfg.pin_dir, err) || !make_pin_dir(cfg.pin_dir, err)) return nullptr;
  // Whoever may write the pin directory may swap the agent's maps and link for their own.
  if (!check_trusted_path(cfg.pin_dir, "the pin directory", false, err)) return nullptr;

  std::unique_ptr<Dataplane> dp(new Dataplane());
  dp->pin_dir_ = cfg.pin_dir;
  dp->iface_ = cfg.iface;
  dp->lock_fd_ = lock_pin_dir(cfg.pin_dir, err);
  if (dp->lock_fd_ < 0) {
    dp->keep_ = true;  // nothing of ours to remove; never touch the other agent's pins
    return nullptr;
  }

  dp->had_pins_ = access((cfg.pin_dir + "/" + DT_MAP_BUCKETS).c_str(), F_OK) == 0;
  // Until attached, a failure must not touch what a previous agent pinned (its link may
  // still enforce with these maps); our own fresh pins go.
  dp->keep_ = dp->had_pins_;
  uint32_t max_sources = 0;
  // Pins of another layout: the changed maps made anew, or refused (pin_layout.h).
  if (!prepare_pins(cfg.pin_dir, map_catalog(), kLayoutVersion, err) || !bucket_map_size(cfg, &max_sources, err) ||
      !dp->load(cfg, max_sources, err)) {
    dp->keep_ = true;
    return nullptr;
  }
  dp->ifindex_ = ifindex;
  dp->hook_ = cfg.hook;
  dp->cfg_ = cfg;
  return dp;
}

bool Dataplane::attach(std::string *err) {
  const bool attached = hook_ == AttachHook::Tc         ? attach_tc(cfg_, ifindex_, err)
                        : hook_ == AttachHook::XdpMulti ? attach_multi(err)
                                                        : attach_xdp(cfg_, ifindex_, had_pins_, err);
  if (!attached || !claim_frames(err)) {
    keep_ = keep_ || had_pins_;  // never throw away bucket state a previous agent left
    return false;
  }
  if (hook_ == AttachHook::XdpMulti) xdp_multi_retire(ifindex_, iface_, multi_previous_);
  multi_previous_.clear();
  keep_ = false;
  remove_other_hook(ifindex_);
  release_frames();
  record_hook();
  if (hook_ == AttachHook::Tc && attached_prog_desc(ifindex_).empty())
    DT_INFO("the XDP hook of %s is free: --attach xdp would drop floods before the kernel builds an skb",
            cfg_.iface.c_str());
  return true;
}

bool Dataplane::attach_xdp(const DataplaneConfig &cfg, int ifindex, bool had_pins, std::string *err) {
  // Take over the link a previous agent pinned for this interface, or create one.
  const std::string link_pin = cfg.pin_dir + "/" + DT_PIN_LINK;
  if (take_over_link(ifindex, link_pin)) return true;
  // Our program in libxdp's dispatcher (a previous agent's --attach xdp-multi) holds the hook:
  // it goes first, so the hook is unenforced until the link below exists.
  if (const int n = xdp_multi_detach_ids(ifindex, xdp_multi_ours(ifindex)); n > 0)
    DT_INFO("switched %s from libxdp's dispatcher to XDP alone: detached dthrottle's program from it",
            cfg.iface.c_str());
  int last_errno = 0;
  link_fd_ = create_xdp_link(cfg, xdp_prog_fd(), ifindex, &mode_, &last_errno);
  if (link_fd_ < 0) {
    keep_ = had_pins;
    *err = attach_error(cfg, ifindex, last_errno);
    return false;
  }
  if (bpf_obj_pin(link_fd_, link_pin.c_str()) != 0) {
    *err = "cannot pin the XDP link at " + link_pin + ": " + errno_str(errno);
    return false;
  }
  return true;
}

bool Dataplane::attach_tc(const DataplaneConfig &cfg, int ifindex, std::string *err) {
  if (!tc_attach(ifindex, cfg.iface, tc_prog_fd(), cfg.pin_dir + "/" + DT_PIN_TC_LINK, qdisc_recorded(cfg.pin_dir),
                 cfg.force_clsact, &tc_, err))
    return false;
  took_over_ = tc_.took_over;
  return true;
}

void Dataplane::record_hook() {
  std::string text = hook_desc() + "\n";
  if (hook_ == AttachHook::Tc && tc_.created_qdisc) text += "clsact-created\n";
  mkdir(kRuntimeDir, 0755);
  // Without it `agent stats` cannot say how the program is attached, and the next agent
  // cannot know that dthrottle created the clsact qdisc: worth a warning, not a failure.
  if (std::string err; !write_file_atomic(runtime_file(pin_dir_, kAttachFile), text, &err))
    DT_WARN("%s: %s will not show how %s is attached", err.c_str(), command_name("stats").c_str(), iface_.c_str());
}

std::string Dataplane::hook_desc() const {
  if (hook_ == AttachHook::Tc) return tc_how_desc(tc_.how);
  if (hook_ == AttachHook::XdpMulti)
    return "native mode, libxdp dispatcher (run priority " + std::to_string(kXdpMultiPriority) + ")";
  return std::string(xdp_mode_name(mode_)) + " mode";
}

bool Dataplane::load(const DataplaneConfig &cfg, uint32_t max_sources, std::string *err) {
  LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = cfg.pin_dir.c_str());
  skel_ = dthrottle_bpf__open_opts(&oo);
  if (!skel_) {
    *err = "cannot open the BPF object: " + errno_str(errno);
    return false;
  }
  // Only the entry point of the hook in use is loaded (and verified): the other would cost
  // the load as much again, for nothing.
  // With --attach xdp-multi neither: libxdp loads dt_xdp from a second instance (open_sharing_maps).
  bpf_program__set_autoload(cfg.hook == AttachHook::Tc ? skel_->progs.dt_xdp : skel_->progs.dt_tc, false);
  if (cfg.hook == AttachHook::XdpMulti) bpf_program__set_autoload(skel_->progs.dt_xdp, false);
  bpf_map__set_max_entries(skel_->maps.buckets, max_sources);
  // Room in the active-source ring for every source to be announced in one period.
  bpf_map__set_max_entries(skel_->maps.active, active_ring_bytes(max_sources));
  fit_verified_pin(cfg);
  bpf_map__set_max_entries(skel_->maps.verified, cfg.max_verified);
  // Without the SYN cookie helpers (before Linux 6.0) their calls are never verified.
  skel_->rodata->dt_syncookie_helpers = probe_syncookie_helpers() > 0;
  instance_ = new_instance();
  skel_->rodata->dt_instance = instance_;
  enable_xdp_frags(cfg);
  max_sources_ = max_sources;
  if (int rc = dthrottle_bpf__load(skel_); rc != 0) {
    *err = "cannot load the BPF program: " + errno_str(rc) +
           (rc == -EPERM || errno == EPERM
                ? " (are you root?)"
                : " (maps pinned under " + cfg.pin_dir + " by an incompatible version? see the log above)");
    return false;
  }
  if (int rc = write_syncookie_ttl(bpf_map__fd(skel_->maps.syncookie), cfg.verified_ttl_ns); rc != 0)
    DT_WARN("cannot write the verified sources' TTL: %s (verified sources keep %llus)", errno_str(rc).c_str(),
            static_cast<unsigned long long>(DT_DEFAULT_VERIFIED_TTL_NS / 1000000000ull));
  // What the pinned lists and bans hold is in force (bits ORed in, never cleared here: a
  // ban another process writes meanwhile sets its own bit first). New pins of the features
  // map over older ones' lists and bans start empty: this is what turns them on.
  const uint32_t bans = ban_bits_in_force(bpf_map__fd(skel_->maps.bans_v4), bpf_map__fd(skel_->maps.bans_v6));
  int frc = set_feature_bits(features_fd(), FeatureWord::kBans, bans, true);
  if (frc == 0)
    frc = set_feature_bits(features_fd(), FeatureWord::kLists, list_bits_in_force(lists_v4_fd(), lists_v6_fd()), true);
  if (frc != 0) {
    *err = "cannot write the features map " + cfg.pin_dir + "/" + DT_MAP_FEATURES + ": " + errno_str(frc);
    return false;
  }
  if (int rc = write_layout(bpf_map__fd(skel_->maps.layout), kLayoutVersion); rc != 0)
    DT_WARN("cannot write the layout version into %s/%s: %s (the next agent will take these pins for layout 1)",
            cfg.pin_dir.c_str(), DT_MAP_LAYOUT, errno_str(rc).c_str());
  return true;
}

void Dataplane::enable_xdp_frags(const DataplaneConfig &cfg) {
  // Multi-buffer XDP where the kernel has it (jumbo frames). In libxdp's dispatcher our copy
  // says so too (xdp_multi_attach), and the dispatcher takes frags only if every program in
  // it does.
  const int frags = probe_xdp_frags();
  skel_->rodata->dt_xdp_frags = frags > 0;
  xdp_frags_ = frags > 0;
  if (frags > 0 && cfg.hook == AttachHook::Xdp)
    bpf_program__set_flags(skel_->progs.dt_xdp, bpf_program__flags(skel_->progs.dt_xdp) | BPF_F_XDP_HAS_FRAGS);
  unsigned mtu = 0;
  if (read_mtu(cfg.iface, &mtu) && cfg.hook != AttachHook::Tc) {
    if (std::string w = xdp_mtu_warning(cfg.iface, mtu, frags); !w.empty()) DT_WARN("%s", w.c_str());
  }
}

bool Dataplane::take_over_link(int ifindex, const std::string &link_pin) {
  int lfd = bpf_obj_get(link_pin.c_str());
  if (lfd < 0) return false;
  bpf_link_info info{};
  uint32_t len = sizeof info;
  bool ours = bpf_obj_get_info_by_fd(lfd, &info, &len) == 0 && info.type == BPF_LINK_TYPE_XDP &&
              static_cast<int>(info.xdp.ifindex) == ifindex;
  if (ours && bpf_link_update(lfd, xdp_prog_fd(), nullptr) == 0) {
    link_fd_ = lfd;
    took_over_ = true;
    mode_ = query_mode(ifindex);
    return true;
  }
  // A link for another (or a vanished) interface: it enforces nothing here.
  DT_WARN("replacing stale pinned link %s (it was attached to ifindex %u)", link_pin.c_str(), info.xdp.ifindex);
  unlink(link_pin.c_str());
  close(lfd);
  return false;
}

int Dataplane::buckets_fd() const { return bpf_map__fd(skel_->maps.buckets); }
int Dataplane::stats_fd() const { return bpf_map__fd(skel_->maps.stats); }
int Dataplane::policy_fd() const { return bpf_map__fd(skel_->maps.policy); }
int Dataplane::config_fd() const { return bpf_map__fd(skel_->maps.config); }
int Dataplane::debit_batch_fd() const { return bpf_map__fd(skel_->maps.debit_batch); }
int Dataplane::debit_prog_fd() const { return bpf_program__fd(skel_->progs.dt_debit); }
int Dataplane::xdp_prog_fd() const { return bpf_program__fd(skel_->progs.dt_xdp); }
int Dataplane::tc_prog_fd() const { return bpf_program__fd(skel_->progs.dt_tc); }
int Dataplane::collect_batch_fd() const { return bpf_map__fd(skel_->maps.collect_batch); }
int Dataplane::collect_prog_fd() const { return bpf_program__fd(skel_->progs.dt_collect); }
int Dataplane::active_ring_fd() const { return bpf_map__fd(skel_->maps.active); }
int Dataplane::active_stage_fd() const { return bpf_map__fd(skel_->maps.active_stage); }
int Dataplane::cluster_exempt_fd() const { return bpf_map__fd(skel_->maps.cluster_exempt); }
int Dataplane::cluster_ports_fd() const { return bpf_map__fd(skel_->maps.cluster_ports); }
int Dataplane::rules_fd(int bank) const { return bpf_map__fd(bank ? skel_->maps.rules1 : skel_->maps.rules0); }
int Dataplane::rule_stats_fd() const { return bpf_map__fd(skel_->maps.rule_stats); }
int Dataplane::rule_names_fd() const { return bpf_map__fd(skel_->maps.rule_names); }
int Dataplane::rule_would_drop_fd() const { return bpf_map__fd(skel_->maps.rule_would_drop); }
int Dataplane::rule_bytes_fd() const { return bpf_map__fd(skel_->maps.rule_bytes); }
int Dataplane::prefix_policy_fd() const { return bpf_map__fd(skel_->maps.prefix_policy); }
int Dataplane::rule_cond_fd() const { return bpf_map__fd(skel_->maps.rule_cond); }
int Dataplane::prefix_drops_fd() const { return bpf_map__fd(skel_->maps.prefix_drops); }
int Dataplane::lists_v4_fd() const { return bpf_map__fd(skel_->maps.lists_v4); }
int Dataplane::lists_v6_fd() const { return bpf_map__fd(skel_->maps.lists_v6); }
int Dataplane::list_stats_fd() const { return bpf_map__fd(skel_->maps.list_stats); }
int Dataplane::features_fd() const { return bpf_map__fd(skel_->maps.features); }
int Dataplane::verified_fd() const { return bpf_map__fd(skel_->maps.verified); }
int Dataplane::verified_ring_fd() const { return bpf_map__fd(skel_->maps.verified_ring); }

MapFds Dataplane::map_fds() const {
  MapFds m;
  m.buckets = buckets_fd(), m.stats = stats_fd(), m.policy = policy_fd(), m.config = config_fd();
  m.rule_stats = rule_stats_fd(), m.rule_names = rule_names_fd(), m.rule_would_drop = rule_would_drop_fd();
  m.rule_bytes = rule_bytes_fd(), m.drop_pending = bpf_map__fd(skel_->maps.drop_pending);
  m.prefix_policy = prefix_policy_fd(), m.prefix_drops = prefix_drops_fd();
  m.lists_v4 = lists_v4_fd(), m.lists_v6 = lists_v6_fd(), m.list_stats = list_stats_fd();
  m.rules0 = rules_fd(0), m.rules1 = rules_fd(1), m.rule_cond = rule_cond_fd();
  return m;
}

void Dataplane::detach_and_unpin() {
  if (hook_ == AttachHook::Tc && tc_.how != TcHow::None) {
    bpf_prog_info own{};
    uint32_t len = sizeof own;
    const uint32_t own_id = bpf_obj_get_info_by_fd(tc_prog_fd(), &own, &len) == 0 ? own.id : 0;
    const std::string removed =
        tc_remove(ifindex_, pin_dir_ + "/" + DT_PIN_TC_LINK, tc_.link_fd, tc_.created_qdisc, own_id);
    tc_.link_fd = -1;
    DT_INFO("detached from %s: removed %s", iface_.c_str(),
            removed.empty() ? "nothing (it was gone)" : removed.c_str());
  }
  if (multi_prog_) {
    xdp_multi_detach(multi_prog_, ifindex_);
    multi_prog_ = nullptr;
    DT_INFO("detached from %s: left libxdp's dispatcher (its other programs stay)", iface_.c_str());
  }
  if (tc_.how != TcHow::None || link_fd_ >= 0 || hook_ == AttachHook::XdpMulti)
    unlink(runtime_file(pin_dir_, kAttachFile).c_str());
  unlink((pin_dir_ + "/" + DT_PIN_LINK).c_str());
  if (link_fd_ >= 0) close(link_fd_);  // last reference: the program detaches
  link_fd_ = -1;
  // NULL: each map's own pin path (maps without one, like debit_batch, are skipped).
  if (skel_) bpf_object__unpin_maps(skel_->obj, nullptr);
  rmdir(pin_dir_.c_str());
  rmdir(DT_DEFAULT_PIN_ROOT);  // only succeeds when empty
}

Dataplane::~Dataplane() {
  if (!keep_) detach_and_unpin();
  if (link_fd_ >= 0) close(link_fd_);
  if (tc_.link_fd >= 0) close(tc_.link_fd);
  xdp_multi_close(multi_prog_);  // still attached (--keep): libxdp's pins hold it
  if (multi_skel_) dthrottle_bpf__destroy(multi_skel_);
  if (skel_) dthrottle_bpf__destroy(skel_);
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace dt
