// dataplane.h - the loaded XDP program and its pinned maps, owned RAII-style.
//
// Dataplane::open() loads dthrottle.bpf.o through its libbpf skeleton with every
// map pinned by name under the pin directory (reusing maps a previous agent left
// there, so bucket state survives restarts); attach() then attaches it (once the
// caller has filled the maps: rules and lists in force from the first packet) through
// a BPF link that is itself pinned: if the agent dies, the link, and so the throttle, stay. A new
// agent that finds a pinned link for the same interface takes it over by swapping
// in its freshly loaded program (bpf_link_update), without a gap in enforcement.
// With --attach tc the same object's tc program is attached at tc ingress instead
// (dataplane/tc_attach.h), with the same maps, pins and take-over. With --attach xdp-multi a
// second instance of the object, sharing every map of the first, gives libxdp its dt_xdp to
// load into the dispatcher (dataplane/xdp_multi.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/no_copy.h"
#include "dataplane/map_reader.h"
#include "dataplane/pin_dir.h"
#include "dataplane/tc_attach.h"

struct dthrottle_bpf;
struct xdp_program;

namespace dt {

enum class XdpMode { Auto, Native, Generic };
bool parse_xdp_mode(const std::string &s, XdpMode *out);
const char *xdp_mode_name(XdpMode m);

// Where the program decides: the XDP hook alone (default), the XDP hook shared through
// libxdp's dispatcher (--attach xdp-multi, dataplane/xdp_multi.h) or tc ingress (--attach tc),
// for hosts whose XDP hook belongs to another program.
enum class AttachHook { Xdp, Tc, XdpMulti };
bool parse_attach_hook(const std::string &s, AttachHook *out);
const char *attach_hook_name(AttachHook h);

struct DataplaneConfig {
  std::string iface;
  std::string pin_dir;
  XdpMode mode = XdpMode::Auto;
  uint32_t max_sources = 0;  // 0: default, or the pinned map's size
  bool max_sources_explicit = false;
  uint32_t max_verified = DT_DEFAULT_MAX_VERIFIED;        // --max-verified
  uint64_t verified_ttl_ns = DT_DEFAULT_VERIFIED_TTL_NS;  // --verified-ttl
  AttachHook hook = AttachHook::Xdp;
  // tc: a clsact filter even where tcx links exist (the tests' way to exercise the path
  // of kernels before 6.6; set by DTHROTTLE_TC_CLSACT=1 in the environment).
  bool force_clsact = false;
};

// Size of the active-source ring for a table of max_sources: one announcement per
// source per period fits (a power of two, at least DT_ACTIVE_RING_BYTES).
uint32_t active_ring_bytes(uint32_t max_sources);

// The id of the program on the XDP hook of ifindex (a dispatcher's, under libxdp) into *id,
// 0 if the hook is free; false if the kernel cannot be asked.
bool xdp_hook_prog_id(int ifindex, uint32_t *id);

class Dataplane : NoCopy {
 public:
  ~Dataplane();

  // Loads and pins, not attached yet. Returns nullptr with a sentence in *err on failure.
  // Until attach() succeeds, destroying it leaves pins a previous agent left as they were.
  static std::unique_ptr<Dataplane> open(const DataplaneConfig &cfg, std::string *err);
  // Attaches (or takes over a previous agent's link): the program decides from then on,
  // with whatever the maps hold. False with a sentence in *err.
  bool attach(std::string *err);

  int buckets_fd() const;
  int stats_fd() const;
  int policy_fd() const;
  int config_fd() const;
  int debit_batch_fd() const;
  int debit_prog_fd() const;
  int xdp_prog_fd() const;
  int collect_batch_fd() const;
  int collect_prog_fd() const;
  int active_ring_fd() const;
  int active_stage_fd() const;
  int cluster_exempt_fd() const;  // the cluster's TCP ports (struct dt_exempt_key)
  int cluster_ports_fd() const;   // their port bitmaps (struct dt_cluster_ports)
  int rules_fd(int bank) const;
  int rule_stats_fd() const;
  int rule_names_fd() const;
  int rule_would_drop_fd() const;  // dry run: per rule, per CPU
  int rule_bytes_fd() const;       // byte rules: bytes per rule, per CPU
  int prefix_policy_fd() const;    // prefix budgets by rule, banked
  int rule_cond_fd() const;        // rules' dst prefixes and len ranges, banked
  int prefix_drops_fd() const;     // drops per prefix level, per CPU
  int lists_v4_fd() const;         // allow and deny lists (dthrottle/lists.h)
  int lists_v6_fd() const;
  int list_stats_fd() const;     // what the lists decided, per CPU
  int features_fd() const;       // which lists and ban tries are in force (dataplane/features.h)
  int verified_fd() const;       // SYN cookies: the verified sources (struct dt_verified)
  int verified_ring_fd() const;  // ... and the ring of those the packet path verified

  int tc_prog_fd() const;
  // The maps the views read (dataplane/map_reader.h), as the agent holds them.
  MapFds map_fds() const;

  bool took_over() const { return took_over_; }
  XdpMode attached_mode() const { return mode_; }
  AttachHook hook() const { return hook_; }
  // --attach tc: a tcx link or a clsact filter (TcHow::None with --attach xdp or xdp-multi).
  TcHow tc_how() const { return tc_.how; }
  // "native mode", "generic mode", "native mode, libxdp dispatcher (run priority 50)",
  // "tc ingress, tcx link", "tc ingress, clsact filter ...".
  std::string hook_desc() const;
  uint32_t max_sources() const { return max_sources_; }
  const std::string &pin_dir() const { return pin_dir_; }

  // Leaves the program attached and everything pinned (for upgrades: --keep).
  void keep_on_exit() { keep_ = true; }

 private:
  Dataplane() = default;
  // Phases of open(). load: opens the skeleton with its maps sized and loads it (false with a
  // sentence in *err); take_over_link: swaps our program into a link a previous agent pinned
  // for this interface (false, after removing any stale link, when there is none to take).
  bool load(const DataplaneConfig &cfg, uint32_t max_sources, std::string *err);
  bool take_over_link(int ifindex, const std::string &link_pin);
  // Multi-buffer XDP (dt_xdp_frags, BPF_F_XDP_HAS_FRAGS) where the kernel has it; a warning
  // for an MTU plain XDP may not take where it does not.
  void enable_xdp_frags(const DataplaneConfig &cfg);
  // --attach xdp: a new XDP link (pinned), unless take_over_link took one.
  bool attach_xdp(const DataplaneConfig &cfg, int ifindex, bool had_pins, std::string *err);
  // --attach tc: tc_attach, then whatever XDP link a previous agent pinned here is removed.
  bool attach_tc(const DataplaneConfig &cfg, int ifindex, std::string *err);
  // --attach xdp-multi: refused where the kernel cannot run the dispatcher; a previous
  // agent's plain XDP link is removed first (it holds the hook), its dt_xdp in the
  // dispatcher once ours joined and owns the frames (attach).
  bool attach_multi(std::string *err);
  // Makes our program the owner of the frames (dt_config.owner): a previous agent's
  // program still attached beside it passes them on from then on. False with *err.
  bool claim_frames(std::string *err);
  // Owner 0 (any program counts) once nothing but ours can see the frames: plain XDP and tc,
  // the other hook clear of a previous agent's program.
  void release_frames();
  // A second instance of the object whose only program is dt_xdp, every map the first's.
  dthrottle_bpf *open_sharing_maps(std::string *err);
  // Our plain XDP link, pinned by a previous agent: removed (the hook is then free).
  bool remove_xdp_link();
  // After attaching: the record for recorded_hook() and a later agent; the other hook's
  // attachment a previous agent left (a switch between --attach xdp and tc) removed.
  void record_hook();
  void remove_other_hook(int ifindex);
  void detach_and_unpin();

  dthrottle_bpf *skel_ = nullptr;
  dthrottle_bpf *multi_skel_ = nullptr;  // --attach xdp-multi: dt_xdp as libxdp loaded it
  xdp_program *multi_prog_ = nullptr;
  std::vector<uint32_t> multi_previous_;  // a previous agent's dt_xdp there, until ours owns the frames
  uint32_t instance_ = 0;                 // our hook program's dt_instance (dt_config.owner)
  int link_fd_ = -1;
  int lock_fd_ = -1;
  bool took_over_ = false;
  bool xdp_frags_ = false;  // the kernel has multi-buffer XDP (enable_xdp_frags)
  bool keep_ = false;
  XdpMode mode_ = XdpMode::Auto;
  AttachHook hook_ = AttachHook::Xdp;
  TcAttachment tc_;
  int ifindex_ = 0;
  bool had_pins_ = false;  // a previous agent's maps were there at open()
  DataplaneConfig cfg_;
  uint32_t max_sources_ = 0;
  std::string pin_dir_;
  std::string iface_;
};

}  // namespace dt
