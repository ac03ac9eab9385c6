// bpf_fixture.h - a GoogleTest fixture around the dthrottle object, as freshly loaded.
//
// The programs and maps are loaded from the skeleton once per process, with pinning
// switched off (nothing appears under /sys/fs/bpf, nothing is shared with a running
// agent) and a small bucket map; before each test every map is put back as the load
// left it (map_reset.h), so no test sees another's state. Packets go
// through the real XDP program with BPF_PROG_TEST_RUN; the helpers use the agent's
// own code (make_policy, publish_rules, read_stats, apply_debits) so the tests
// exercise the pair the way the agent drives it.
//
// Not root, or no BPF in this kernel: the test FAILS with a message saying so.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/no_copy.h"
#include "dataplane/collector.h"
#include "dataplane/debits.h"
#include "dataplane/map_reader.h"
#include "dataplane/policy.h"
#include "dthrottle/common.h"
#include "rules/prefix_limits.h"

struct dthrottle_bpf;

namespace dt::test {

// Shortest frame BPF_PROG_TEST_RUN accepts: an Ethernet header (ETH_HLEN).
constexpr size_t kMinTestFrame = 14;

// Runs the XDP program `prog_fd` `repeat` times on `frame` (BPF_PROG_TEST_RUN).
// Returns 0 or -errno; *verdict is the last run's return value. The kernel refuses
// frames shorter than kMinTestFrame (EINVAL), even behind XDP metadata.
int test_run_xdp(int prog_fd, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *verdict);

// Runs the tc program `prog_fd` once on `frame` as an skb at ingress (BPF_PROG_TEST_RUN
// builds it with skb->data at the Ethernet header); `gso_segs` as GRO would set it for a
// merged skb (0: a plain one). Returns 0 or -errno; *verdict is TC_ACT_OK, TC_ACT_SHOT, ...
int test_run_tc(int prog_fd, const std::vector<uint8_t> &frame, uint32_t gso_segs, uint32_t *verdict);

// "XDP_PASS", "XDP_DROP", ... for messages.
std::string verdict_name(int verdict);
// All counters on one line, for messages.
std::string stats_to_string(const dt_stats &s);

// A debit entry for rule 0 (an IPv6 address is cut to its /64, as peers report it).
dt_debit make_debit(const std::string &addr, uint32_t hits);

// Every possible CPU's value of element `key` of the per-CPU map `fd` (zeros, and a
// test failure, if it cannot be read).
template <class T>
std::vector<T> per_cpu_values(int fd, uint32_t key) {
  std::vector<T> v;
  if (int rc = read_per_cpu(fd, key, &v); rc != 0)
    ADD_FAILURE() << "per-CPU map lookup of element " << key << ": " << strerror(-rc);
  return v;
}

// The sum over CPUs of element `key` of a per-CPU map of counters (dt::sum_per_cpu, as
// the agent reads them; zero, and a test failure, if it cannot be read).
template <class T>
T summed_per_cpu(int fd, uint32_t key) {
  T sum{};
  if (int rc = sum_per_cpu(fd, key, &sum); rc != 0)
    ADD_FAILURE() << "per-CPU map lookup of element " << key << ": " << strerror(-rc);
  return sum;
}

// CPUs this process may run on (at most `max` of them), in order.
std::vector<int> allowed_cpus(size_t max);

// Keeps the calling thread on the CPU it runs on while it lives (then restores its
// affinity): for tests of per-CPU state, which every BPF_PROG_TEST_RUN of the thread
// then shares. ok() is false (and a failure added) if the thread could not be pinned.
class PinnedToThisCpu : NoCopy {
 public:
  PinnedToThisCpu();
  ~PinnedToThisCpu();
  bool ok() const { return ok_; }
  int cpu() const { return cpu_; }

 private:
  cpu_set_t saved_{};
  int cpu_ = -1;
  bool ok_ = false;
};

class BpfFixture : public ::testing::Test {
 public:
  // Sources any test may create: an LRU map sized by bucket_capacity() never evicts here.
  static constexpr uint32_t kMaxSources = 1024;
  // The bucket map's size: kMaxSources plus what a reset can leave parked on other CPUs.
  // A deleted LRU element goes back to the free list of the CPU that took it (up to about
  // 256 a CPU), and a test running elsewhere cannot have them without evicting.
  static uint32_t bucket_capacity();
  // The object's dt_instance, as the agent gives each load its own (dt_config.owner).
  static constexpr uint32_t kInstance = 0x5eed;

 protected:
  void SetUp() override;
  void TearDown() override;

  // Publishes rule 0 = (rate/s, burst) the way the agent does. Fails the test on error.
  void set_policy(double rate, uint64_t burst);
  // The same for a byte budget: rate in bytes/s, burst in bytes (DT_POL_BYTES).
  void set_byte_policy(double rate, uint64_t burst);
  // Publishes rule 0 = `p` as it is (e.g. live_policy() with DT_POL_DRY_RUN added).
  void publish_policy(const dt_policy &p);
  // Rule 0 = (rate/s, burst) with prefix budgets `levels` (bytes: a byte budget), as
  // the agent compiles them (compile_prefix_limits, DT_POL_PREFIX).
  // dry_run: the rule in dry run (DT_POL_DRY_RUN).
  void set_prefix_policy(double rate, uint64_t burst, const std::vector<PrefixLimit> &levels, bool bytes = false,
                         bool dry_run = false);
  // Rule 0's would-drop count (rule_would_drop), summed over CPUs.
  uint64_t would_drop_of_rule0();
  // The bucket of the prefix level v4/bits or v6/bits that `addr` falls in, or nullopt.
  std::optional<dt_bucket> prefix_bucket(const std::string &addr, unsigned bits);
  // Packets dropped by level `slot` of rule 0 (IPv6 levels from DT_PREFIX_LEVELS), summed over CPUs.
  uint64_t prefix_drops(uint32_t slot);
  int prefix_policy_fd() const;
  // Publishes an empty rule set (interval_ns 0 everywhere: fail open).
  void clear_policy();
  // The policy of rule 0 as the XDP program sees it.
  dt_policy live_policy();
  // The config map's one element (bank, epoch, flags, coarse_lag_ns, owner).
  dt_config live_config();

  // One packet through the XDP program: its verdict, or -1 (and a test failure) if
  // BPF_PROG_TEST_RUN itself failed.
  int run(const std::vector<uint8_t> &frame);

  // The same through the tc program (dt_tc): TC_ACT_OK, TC_ACT_SHOT, or -1 on failure.
  int run_tc(const std::vector<uint8_t> &frame, uint32_t gso_segs = 0);

  dt_stats stats();
  // The bucket of `addr` (IPv4 or IPv6 text) as users read it (dt::read_bucket: the
  // drops held per CPU added), or nullopt if there is none.
  std::optional<dt_bucket> bucket(const std::string &addr);
  long bucket_count();
  // tokens in thousandths at this instant, under the live policy.
  int64_t tokens_milli(const dt_bucket &b);
  // Checks that `b` holds `want` tokens plus at most the refill since the test began
  // (the bucket arithmetic gives exactly burst - passed - debited + refill for a
  // bucket created during the test). Loose by nothing but that refill bound.
  void expect_tokens(const dt_bucket &b, int64_t want, const std::string &what);

  DebitResult apply(const std::vector<dt_debit> &debits);
  // The agent's Collector over this object's maps and dt_collect, not enabled yet.
  std::unique_ptr<Collector> new_collector();

  int xdp_fd() const;
  int tc_fd() const;
  int debit_prog_fd() const;
  int debit_batch_fd() const;
  int buckets_fd() const;
  int stats_fd() const;
  int config_fd() const;
  int active_ring_fd() const;
  int active_stage_fd() const;
  int drop_pending_fd() const;
  int collect_batch_fd() const;
  int collect_prog_fd() const;
  int cluster_exempt_fd() const;
  int cluster_ports_fd() const;
  int rule_bytes_fd() const;
  int clock_anchor_fd() const;
  // The fd of the object's map called `name` (maps_catalog.h), or -1 (and a failure).
  int map_fd(const char *name) const;
  // The maps publish_rules writes, with both rules tries (a rules file's compiled form).
  RuleMaps rule_maps();

  uint64_t start_ns_ = 0;  // CLOCK_MONOTONIC when the object was loaded

 private:
  RuleMaps policy_maps();
  dthrottle_bpf *skel_ = nullptr;
};

}  // namespace dt::test
