// programs.cpp - Throttle and Rotator over the dthrottle and bench skeletons.
#include "bench/programs.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "bench.skel.h"
#include "bench/measure.h"
#include "common/clock.h"
#include "dataplane/dataplane.h"
#include "dataplane/map_reader.h"
#include "dthrottle.skel.h"

namespace dt::bench {

void SkeletonDestroyer::operator()(dthrottle_bpf *s) const { dthrottle_bpf__destroy(s); }
void SkeletonDestroyer::operator()(bench_bpf *s) const { bench_bpf__destroy(s); }
void SkeletonDestroyer::operator()(bpf_object *o) const { bpf_object__close(o); }

namespace {

// Rule 0 set to `pol`, and the config as the agent writes it: the coarse clock's lag (the
// refusal shortcut), --clock coarse if asked.
void configure(int policy_fd, int config_fd, const dt_policy &pol, bool coarse_clock) {
  dt::RuleMaps maps;
  maps.policy_fd = policy_fd;
  maps.config_fd = config_fd;
  if (int rc = dt::publish_rules(maps, {pol}, {}, {}); rc != 0) die("publish_rules: %s", strerror(-rc));
  if (dt::update_config_flags(config_fd, coarse_clock ? DT_CFG_COARSE_CLOCK : 0, 0, dt::coarse_clock_lag_ns()) != 0)
    die("cannot write the config map");
}

int map_fd(bpf_object *o, const char *name) {
  const bpf_map *m = bpf_object__find_map_by_name(o, name);
  if (!m) die("the object has no map %s", name);
  return bpf_map__fd(m);
}

}  // namespace

Throttle::Throttle(uint32_t capacity, const dt_policy &pol, bool coarse_clock) {
  skel_.reset(dthrottle_bpf__open());
  if (!skel_) die("cannot open the dthrottle skeleton: %s", strerror(errno));
  bpf_map *m;
  bpf_object__for_each_map(m, skel_->obj) bpf_map__set_pin_path(m, nullptr);
  bpf_map__set_max_entries(skel_->maps.buckets, capacity);
  bpf_map__set_max_entries(skel_->maps.active, dt::active_ring_bytes(capacity));  // as the agent does
  if (int rc = dthrottle_bpf__load(skel_.get()); rc != 0)
    die("cannot load dthrottle.bpf.o (bucket map of %u): %s", capacity, strerror(-rc));
  const int cfd = bpf_map__fd(skel_->maps.config);
  configure(bpf_map__fd(skel_->maps.policy), cfd, pol, coarse_clock);
  fd = {bpf_program__fd(skel_->progs.dt_xdp),   bpf_program__fd(skel_->progs.dt_tc),
        bpf_program__fd(skel_->progs.dt_debit), bpf_program__fd(skel_->progs.dt_collect),
        bpf_map__fd(skel_->maps.buckets),       bpf_map__fd(skel_->maps.stats),
        bpf_map__fd(skel_->maps.debit_batch),   cfd,
        bpf_map__fd(skel_->maps.active),        bpf_map__fd(skel_->maps.active_stage),
        bpf_map__fd(skel_->maps.collect_batch), bpf_map__fd(skel_->maps.prefix_policy),
        bpf_map__fd(skel_->maps.lists_v4),      bpf_map__fd(skel_->maps.lists_v6),
        bpf_map__fd(skel_->maps.list_stats),    bpf_map__fd(skel_->maps.capture_ctl),
        bpf_map__fd(skel_->maps.capture_cpu),   bpf_map__fd(skel_->maps.verified),
        bpf_map__fd(skel_->maps.verified_ring), bpf_map__fd(skel_->maps.syncookie),
        bpf_map__fd(skel_->maps.features)};
}

Throttle::Throttle(uint32_t capacity, const dt_policy &pol, const std::string &object_path) {
  obj_.reset(bpf_object__open_file(object_path.c_str(), nullptr));
  if (!obj_) die("cannot open %s: %s", object_path.c_str(), strerror(errno));
  bpf_map *m;
  bpf_object__for_each_map(m, obj_.get()) bpf_map__set_pin_path(m, nullptr);
  bpf_map__set_max_entries(bpf_object__find_map_by_name(obj_.get(), "buckets"), capacity);
  bpf_map__set_max_entries(bpf_object__find_map_by_name(obj_.get(), "active"), dt::active_ring_bytes(capacity));
  if (int rc = bpf_object__load(obj_.get()); rc != 0)
    die("cannot load %s (bucket map of %u): %s", object_path.c_str(), capacity, strerror(-rc));
  fd.config = map_fd(obj_.get(), "config");
  // Twice: both banks hold the policy, for the variant whose config (and bank) is a constant.
  configure(map_fd(obj_.get(), "policy"), fd.config, pol, false);
  configure(map_fd(obj_.get(), "policy"), fd.config, pol, false);
  const bpf_program *xdp = bpf_object__find_program_by_name(obj_.get(), "dt_xdp");
  if (!xdp) die("%s has no dt_xdp", object_path.c_str());
  fd.xdp = bpf_program__fd(xdp);
  fd.buckets = map_fd(obj_.get(), "buckets");
  fd.stats = map_fd(obj_.get(), "stats");
}

dt::RuleMaps Throttle::rule_maps() const {
  dt::RuleMaps m;
  m.policy_fd = bpf_map__fd(skel_->maps.policy);
  m.config_fd = fd.config;
  m.rules_fd[0] = bpf_map__fd(skel_->maps.rules0);
  m.rules_fd[1] = bpf_map__fd(skel_->maps.rules1);
  m.names_fd = bpf_map__fd(skel_->maps.rule_names);
  m.cond_fd = bpf_map__fd(skel_->maps.rule_cond);
  return m;
}

dt_stats Throttle::stats() const {
  dt_stats s{};
  if (int rc = dt::read_stats(fd.stats, &s); rc != 0) die("read_stats: %s", strerror(-rc));
  return s;
}

bool Throttle::bucket(const dt_key &key, dt_bucket *out) const {
  return bpf_map_lookup_elem(fd.buckets, &key, out) == 0;
}

std::unique_ptr<dthrottle_bpf, SkeletonDestroyer> Throttle::open_xdp_sibling() const {
  if (!skel_) die("a variant of the object has no sibling");
  std::unique_ptr<dthrottle_bpf, SkeletonDestroyer> s(dthrottle_bpf__open());
  if (!s) die("cannot open the dthrottle skeleton: %s", strerror(errno));
  *s->rodata = *skel_->rodata;
  bpf_program *p;
  bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, p == s->progs.dt_xdp);
  bpf_map *m;
  bpf_object__for_each_map(m, s->obj) {
    bpf_map__set_pin_path(m, nullptr);
    const bpf_map *mine = bpf_object__find_map_by_name(skel_->obj, bpf_map__name(m));
    if (!mine || bpf_map__reuse_fd(m, bpf_map__fd(mine)) != 0) die("cannot share the map %s", bpf_map__name(m));
  }
  return s;
}

Rotator::Rotator() {
  skel_.reset(bench_bpf__open());
  if (!skel_) die("cannot open the bench skeleton: %s", strerror(errno));
  bpf_map__set_max_entries(skel_->maps.baseline_counts, kBucketCapacity);
  bpf_map__set_max_entries(skel_->maps.clock_tats, kBucketCapacity);
  bpf_map__set_max_entries(skel_->maps.counted_buckets, kBucketCapacity);
  if (int rc = bench_bpf__load(skel_.get()); rc != 0) die("cannot load bench.bpf.o: %s", strerror(-rc));
  fd = {bpf_program__fd(skel_->progs.dt_bench_baseline), bpf_program__fd(skel_->progs.dt_bench_clock),
        bpf_program__fd(skel_->progs.dt_bench_readonly), bpf_program__fd(skel_->progs.dt_bench_empty),
        bpf_program__fd(skel_->progs.dt_bench_counted),  bpf_program__fd(skel_->progs.dt_bench_counted_drop)};
}

void Rotator::set_sources(bool ipv6, uint32_t base_host_order, uint32_t n) {
  skel_->bss->ipv6 = ipv6;
  skel_->bss->base_addr = htonl(base_host_order);
  skel_->data->nsources = n;
}

double Rotator::run(int target, const std::vector<uint8_t> &frame, uint32_t repeat, uint32_t *retval) {
  uint32_t slot = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.jump), &slot, &target, BPF_ANY) != 0)
    die("cannot put the target in the prog array: %s", strerror(errno));
  skel_->bss->next_source = 0;
  return run_direct(bpf_program__fd(skel_->progs.dt_bench_rotate), frame, repeat, retval);
}

Replayer::Replayer(const Throttle &throttle) {
  skel_.reset(bench_bpf__open());
  if (!skel_) die("cannot open the bench skeleton: %s", strerror(errno));
  bpf_map__set_max_entries(skel_->maps.baseline_counts, 1);  // the baselines are not run here
  bpf_map__set_max_entries(skel_->maps.clock_tats, 1);
  bpf_map__set_max_entries(skel_->maps.counted_buckets, 1);
  if (int rc = bpf_map__reuse_fd(skel_->maps.replay_verified, throttle.fd.verified); rc != 0)
    die("cannot share the verified sources' map with the bench: %s", strerror(-rc));
  if (int rc = bench_bpf__load(skel_.get()); rc != 0) die("cannot load bench.bpf.o: %s", strerror(-rc));
}

int Replayer::empty_fd() const { return bpf_program__fd(skel_->progs.dt_bench_empty); }

double Replayer::run(int target, const std::vector<uint8_t> &frame, const dt_key &key, uint32_t repeat,
                     uint32_t *retval) {
  if (frame.size() > sizeof skel_->bss->replay_frame)
    die("a replayed frame holds %zu bytes at most", sizeof skel_->bss->replay_frame);
  uint32_t slot = 0;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.jump), &slot, &target, BPF_ANY) != 0)
    die("cannot put the target in the prog array: %s", strerror(errno));
  memcpy(skel_->bss->replay_frame, frame.data(), frame.size());
  skel_->bss->replay_len = static_cast<uint32_t>(frame.size());
  memcpy(skel_->bss->replay_key, &key, sizeof key);
  return run_direct(bpf_program__fd(skel_->progs.dt_bench_replay), frame, repeat, retval);
}

namespace {

long entries(int fd) {
  dt_key cur{}, next{};
  long n = 0;
  for (const dt_key *k = nullptr; bpf_map_get_next_key(fd, k, &next) == 0; k = &cur, n++) cur = next;
  return n;
}

}  // namespace

long Rotator::baseline_entries() const { return entries(bpf_map__fd(skel_->maps.baseline_counts)); }
long Rotator::clock_entries() const { return entries(bpf_map__fd(skel_->maps.clock_tats)); }

}  // namespace dt::bench
