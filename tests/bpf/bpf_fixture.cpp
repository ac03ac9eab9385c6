// bpf_fixture.cpp - see bpf_fixture.h.
#include "bpf_fixture.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/address.h"
#include "common/clock.h"
#include "dataplane/kernel_probe.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "dthrottle.skel.h"
#include "dthrottle/bucket.h"
#include "map_reset.h"

namespace dt::test {

std::vector<int> allowed_cpus(size_t max) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < max; c++)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

PinnedToThisCpu::PinnedToThisCpu() {
  if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) {
    ADD_FAILURE() << "sched_getaffinity: " << strerror(errno);
    return;
  }
  cpu_ = sched_getcpu();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu_, &one);
  ok_ = sched_setaffinity(0, sizeof one, &one) == 0;
  if (!ok_) ADD_FAILURE() << "cannot pin the test thread to CPU " << cpu_ << ": " << strerror(errno);
}

PinnedToThisCpu::~PinnedToThisCpu() {
  if (ok_) sched_setaffinity(0, sizeof saved_, &saved_);
}

int test_run_xdp(int prog_fd, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *verdict) {
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<uint32_t>(frame.size()),
              .repeat = static_cast<int>(repeat));
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) return -errno;
  *verdict = opts.retval;
  return 0;
}

int test_run_tc(int prog_fd, const std::vector<uint8_t> &frame, uint32_t gso_segs, uint32_t *verdict) {
  __sk_buff ctx{};
  ctx.gso_segs = gso_segs;
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame.data(), .data_size_in = static_cast<uint32_t>(frame.size()),
              .ctx_in = &ctx, .ctx_size_in = sizeof ctx, .repeat = 1);
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) return -errno;
  *verdict = opts.retval;
  return 0;
}

std::string verdict_name(int v) {
  switch (v) {
    case XDP_ABORTED: return "XDP_ABORTED";
    case XDP_DROP: return "XDP_DROP";
    case XDP_PASS: return "XDP_PASS";
    case XDP_TX: return "XDP_TX";
    case XDP_REDIRECT: return "XDP_REDIRECT";
  }
  return "verdict " + std::to_string(v);
}

std::string stats_to_string(const dt_stats &s) {
  std::string out;
#define DT_FIELD_TEXT(field, label, metric, help) \
  out += (out.empty() ? "" : " ") + std::string(#field "=") + std::to_string(s.field);
  DT_STATS_FIELDS(DT_FIELD_TEXT)
#undef DT_FIELD_TEXT
  return out;
}

dt_debit make_debit(const std::string &addr, uint32_t hits) {
  dt_debit d{};
  if (!key_from_string(addr, &d.key)) ADD_FAILURE() << "not an address: " << addr;
  d.hits = hits;
  // Peers report bucket keys: under the default rule an IPv6 source's /64.
  if (addr.find(':') != std::string::npos) dt_mask_addr(d.key.addr, 64);
  d.key.rule = DT_RULE_DEFAULT;
  return d;
}

uint32_t BpfFixture::bucket_capacity() {
  const int cpus = libbpf_num_possible_cpus();
  return kMaxSources + 256 * static_cast<uint32_t>(cpus > 0 ? cpus : 1);
}

namespace {

// The one dthrottle object of this process, or why it could not be loaded.
struct LoadedObject {
  dthrottle_bpf *skel = nullptr;
  std::string error;
  ~LoadedObject() { dthrottle_bpf__destroy(skel); }
};

// Opens and loads the object with pinning off (nothing appears under /sys/fs/bpf, nothing
// is shared with a running agent) and a small bucket map.
void load_object(LoadedObject *o) {
  dthrottle_bpf *skel = dthrottle_bpf__open();
  if (!skel) {
    o->error = std::string("cannot open the dthrottle BPF object: ") + strerror(errno);
    return;
  }
  // The maps are LIBBPF_PIN_BY_NAME: without this a plain load would pin them under
  // /sys/fs/bpf (and reuse whatever a running agent pinned there).
  bpf_map *map;
  bpf_object__for_each_map(map, skel->obj) {
    if (int rc = bpf_map__set_pin_path(map, nullptr); rc != 0) {
      o->error = std::string("cannot clear the pin path of map ") + bpf_map__name(map) + ": " + strerror(-rc);
      dthrottle_bpf__destroy(skel);
      return;
    }
  }
  int rc = bpf_map__set_max_entries(skel->maps.buckets, BpfFixture::bucket_capacity());
  skel->rodata->dt_instance = BpfFixture::kInstance;
  // Multi-buffer XDP as the agent loads it (--attach xdp) where the kernel has it.
  if (probe_xdp_frags() > 0) {
    skel->rodata->dt_xdp_frags = 1;
    if (rc == 0)
      rc = bpf_program__set_flags(skel->progs.dt_xdp, bpf_program__flags(skel->progs.dt_xdp) | BPF_F_XDP_HAS_FRAGS);
  }
  if (rc == 0) rc = dthrottle_bpf__load(skel);
  if (rc != 0) {
    const std::string floor = check_kernel_floor();
    o->error = std::string("cannot load the dthrottle BPF object (") + strerror(-rc) + "): " +
               (floor.empty() ? "is BPF available in this kernel, and are we root? "
                                "libbpf's log above has the details"
                              : floor);
    dthrottle_bpf__destroy(skel);
    return;
  }
  o->skel = skel;
}

// Loaded by the first test that asks (verifying the programs is most of a load's cost);
// every test after it gets the same programs with its maps reset (map_reset.h).
const LoadedObject &loaded_object() {
  static LoadedObject o;
  static bool tried = false;
  if (!tried) {
    tried = true;
    load_object(&o);
  }
  return o;
}

}  // namespace

void BpfFixture::SetUp() {
  if (geteuid() != 0)
    GTEST_FAIL() << "the BPF tests need root (BPF_PROG_LOAD, BPF_PROG_TEST_RUN); "
                    "run them as root, e.g. `sudo build/bpf_tests` or `make test` as root";
  const LoadedObject &o = loaded_object();
  if (!o.skel) GTEST_FAIL() << o.error;
  skel_ = o.skel;
  if (std::string err = reset_object_maps(skel_->obj); !err.empty())
    GTEST_FAIL() << "cannot reset the BPF object's maps before the test: " << err;
  // Configured as the agent does: a refusal may be decided on the coarse clock.
  if (int rc = update_config_flags(config_fd(), 0, 0, coarse_clock_lag_ns()); rc != 0)
    GTEST_FAIL() << "cannot write the config map: " << strerror(-rc);
  start_ns_ = mono_now_ns();
}

// The object stays loaded for the next test; its maps are reset then.
void BpfFixture::TearDown() { skel_ = nullptr; }

int BpfFixture::xdp_fd() const { return bpf_program__fd(skel_->progs.dt_xdp); }
int BpfFixture::tc_fd() const { return bpf_program__fd(skel_->progs.dt_tc); }
int BpfFixture::debit_prog_fd() const { return bpf_program__fd(skel_->progs.dt_debit); }
int BpfFixture::debit_batch_fd() const { return bpf_map__fd(skel_->maps.debit_batch); }
int BpfFixture::buckets_fd() const { return bpf_map__fd(skel_->maps.buckets); }
int BpfFixture::stats_fd() const { return bpf_map__fd(skel_->maps.stats); }
int BpfFixture::config_fd() const { return bpf_map__fd(skel_->maps.config); }
int BpfFixture::active_ring_fd() const { return bpf_map__fd(skel_->maps.active); }
int BpfFixture::active_stage_fd() const { return bpf_map__fd(skel_->maps.active_stage); }
int BpfFixture::drop_pending_fd() const { return bpf_map__fd(skel_->maps.drop_pending); }
int BpfFixture::collect_batch_fd() const { return bpf_map__fd(skel_->maps.collect_batch); }
int BpfFixture::collect_prog_fd() const { return bpf_program__fd(skel_->progs.dt_collect); }
int BpfFixture::cluster_exempt_fd() const { return bpf_map__fd(skel_->maps.cluster_exempt); }
int BpfFixture::cluster_ports_fd() const { return bpf_map__fd(skel_->maps.cluster_ports); }
int BpfFixture::rule_bytes_fd() const { return bpf_map__fd(skel_->maps.rule_bytes); }
int BpfFixture::clock_anchor_fd() const { return bpf_map__fd(skel_->maps.clock_anchor); }

// The policy and config maps alone: rule sets without a rules trie (every packet uses rule 0).
RuleMaps BpfFixture::policy_maps() {
  RuleMaps m;
  m.policy_fd = bpf_map__fd(skel_->maps.policy);
  m.config_fd = bpf_map__fd(skel_->maps.config);
  m.prefix_fd = bpf_map__fd(skel_->maps.prefix_policy);
  m.cond_fd = bpf_map__fd(skel_->maps.rule_cond);
  return m;
}

int BpfFixture::map_fd(const char *name) const {
  const int fd = bpf_object__find_map_fd_by_name(skel_->obj, name);
  if (fd < 0) ADD_FAILURE() << "the object has no map '" << name << "'";
  return fd;
}

RuleMaps BpfFixture::rule_maps() {
  RuleMaps m = policy_maps();
  m.rules_fd[0] = bpf_map__fd(skel_->maps.rules0);
  m.rules_fd[1] = bpf_map__fd(skel_->maps.rules1);
  return m;
}

int BpfFixture::prefix_policy_fd() const { return bpf_map__fd(skel_->maps.prefix_policy); }

void BpfFixture::set_prefix_policy(double rate, uint64_t burst, const std::vector<PrefixLimit> &levels, bool bytes,
                                   bool dry_run) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(make_policy(rate, burst, &p, &err, bytes)) << "make_policy(" << rate << ", " << burst << "): " << err;
  ASSERT_TRUE(check_prefix_limits(levels, "default", bytes, p.v4_key_bits, p.v6_key_bits, &err)) << err;
  p.flags |= DT_POL_PREFIX | (dry_run ? DT_POL_DRY_RUN : 0);
  const int rc = publish_rules(policy_maps(), {p}, {}, {}, {compile_prefix_limits(levels)});
  ASSERT_EQ(rc, 0) << "publish_rules (with prefix budgets): " << strerror(-rc);
}

std::optional<dt_bucket> BpfFixture::prefix_bucket(const std::string &addr, unsigned bits) {
  dt_key src{}, key{};
  if (!key_from_string(addr, &src)) {
    ADD_FAILURE() << "not an address: " << addr;
    return std::nullopt;
  }
  dt_key_for_level(&key, &src, DT_RULE_DEFAULT, bits, addr.find(':') != std::string::npos);
  dt_bucket b{};
  if (bpf_map_lookup_elem(buckets_fd(), &key, &b) != 0) return std::nullopt;
  return b;
}

std::unique_ptr<Collector> BpfFixture::new_collector() {
  return std::make_unique<Collector>(config_fd(), active_ring_fd(), active_stage_fd(), collect_batch_fd(),
                                     collect_prog_fd());
}

uint64_t BpfFixture::would_drop_of_rule0() {
  return summed_per_cpu<uint64_t>(bpf_map__fd(skel_->maps.rule_would_drop), DT_RULE_DEFAULT);
}

uint64_t BpfFixture::prefix_drops(uint32_t slot) {
  return summed_per_cpu<uint64_t>(bpf_map__fd(skel_->maps.prefix_drops), DT_RULE_DEFAULT * DT_PREFIX_SLOTS + slot);
}

void BpfFixture::set_policy(double rate, uint64_t burst) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(make_policy(rate, burst, &p, &err)) << "make_policy(" << rate << ", " << burst << "): " << err;
  int rc = publish_rules(policy_maps(), {p}, {}, {});
  ASSERT_EQ(rc, 0) << "publish_rules (one policy): " << strerror(-rc);
}

void BpfFixture::publish_policy(const dt_policy &p) {
  int rc = publish_rules(policy_maps(), {p}, {}, {});
  ASSERT_EQ(rc, 0) << "publish_rules (one policy): " << strerror(-rc);
}

void BpfFixture::set_byte_policy(double rate, uint64_t burst) {
  dt_policy p{};
  std::string err;
  ASSERT_TRUE(make_policy(rate, burst, &p, &err, true))
      << "make_policy(" << rate << " B/s, " << burst << " B): " << err;
  int rc = publish_rules(policy_maps(), {p}, {}, {});
  ASSERT_EQ(rc, 0) << "publish_rules (one byte policy): " << strerror(-rc);
}

void BpfFixture::clear_policy() {
  int rc = publish_rules(policy_maps(), {}, {}, {});
  ASSERT_EQ(rc, 0) << "publish_rules (empty): " << strerror(-rc);
}

dt_policy BpfFixture::live_policy() {
  dt_policy p{};
  int rc = read_live_policy(bpf_map__fd(skel_->maps.policy), bpf_map__fd(skel_->maps.config), 0, &p);
  EXPECT_EQ(rc, 0) << "read_live_policy: " << strerror(-rc);
  return p;
}

dt_config BpfFixture::live_config() {
  dt_config c{};
  const uint32_t zero = 0;
  EXPECT_EQ(bpf_map_lookup_elem(config_fd(), &zero, &c), 0) << "config: " << strerror(errno);
  return c;
}

int BpfFixture::run(const std::vector<uint8_t> &frame) {
  uint32_t verdict = 0;
  int rc = test_run_xdp(xdp_fd(), frame, 1, &verdict);
  if (rc != 0) {
    ADD_FAILURE() << "BPF_PROG_TEST_RUN of a " << frame.size() << "-byte frame failed: " << strerror(-rc);
    return -1;
  }
  return static_cast<int>(verdict);
}

int BpfFixture::run_tc(const std::vector<uint8_t> &frame, uint32_t gso_segs) {
  uint32_t verdict = 0;
  int rc = test_run_tc(tc_fd(), frame, gso_segs, &verdict);
  if (rc != 0) {
    ADD_FAILURE() << "BPF_PROG_TEST_RUN of the tc program on a " << frame.size()
                  << "-byte frame failed: " << strerror(-rc);
    return -1;
  }
  return static_cast<int>(verdict);
}

dt_stats BpfFixture::stats() {
  dt_stats s{};
  int rc = read_stats(stats_fd(), &s);
  EXPECT_EQ(rc, 0) << "read_stats: " << strerror(-rc);
  return s;
}

std::optional<dt_bucket> BpfFixture::bucket(const std::string &addr) {
  dt_key key{};
  if (!key_from_string(addr, &key)) {
    ADD_FAILURE() << "not an address: " << addr;
    return std::nullopt;
  }
  // The kernel keys a source by its rule's key prefix (the default rule: IPv4 /32,
  // IPv6 /64): look it up the same way, with the same shared function.
  const dt_policy pol = live_policy();
  dt_key_for_rule(&key, &pol, DT_RULE_DEFAULT, addr.find(':') != std::string::npos);
  // As users read it (agent stats, explain): the drops held per CPU added.
  dt_bucket b{};
  if (int rc = read_bucket(buckets_fd(), drop_pending_fd(), key, &b); rc != 0) {
    EXPECT_EQ(rc, -ENOENT) << "bucket lookup of " << addr << ": " << strerror(-rc);
    return std::nullopt;
  }
  return b;
}

long BpfFixture::bucket_count() {
  long n = for_each_bucket(buckets_fd(), [](const dt_key &, const dt_bucket &) {});
  EXPECT_GE(n, 0) << "for_each_bucket: " << strerror(static_cast<int>(-n));
  return n;
}

int64_t BpfFixture::tokens_milli(const dt_bucket &b) {
  const dt_policy p = live_policy();
  return dt_gcra_tokens_milli(b.tat_ns, mono_now_ns(), &p);
}

void BpfFixture::expect_tokens(const dt_bucket &b, int64_t want, const std::string &what) {
  const dt_policy p = live_policy();
  ASSERT_NE(p.interval_ns, 0u) << "no live policy";
  const int64_t got = dt_gcra_tokens_milli(b.tat_ns, mono_now_ns(), &p);
  // Refill since the test began, in thousandths, rounded up; +1 for the rounding
  // toward zero of a negative balance.
  const uint64_t elapsed = mono_now_ns() - start_ns_;
  const int64_t slack =
      static_cast<int64_t>(std::ceil(1e3 * static_cast<double>(elapsed) / static_cast<double>(p.interval_ns))) + 1;
  EXPECT_GE(got, want * 1000) << what << ": fewer tokens than burst - passed - debited";
  EXPECT_LE(got, want * 1000 + slack) << what << ": more tokens than burst - passed - debited "
                                      << "+ refill since the test began";
}

DebitResult BpfFixture::apply(const std::vector<dt_debit> &debits) {
  DebitResult r = apply_debits(debit_batch_fd(), debit_prog_fd(), debits);
  EXPECT_EQ(r.error, 0) << "apply_debits: " << strerror(-r.error);
  return r;
}

}  // namespace dt::test
