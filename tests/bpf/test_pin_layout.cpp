// test_pin_layout.cpp - the layout version of the pins (agent/dataplane/pin_layout.h) on
// real pins: the object is loaded as the agent loads it, pinned under a private directory
// of /sys/fs/bpf, and met again by "another build": one whose catalogue differs (a map's
// layout bumped) or pins marked with another version.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/map_reader.h"
#include "dataplane/pin_layout.h"
#include "dthrottle.skel.h"
#include "dthrottle/common.h"

namespace {

class PinLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_FAIL() << "pinning maps needs root: run build/bpf_tests as root";
    if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
      GTEST_FAIL() << "cannot make " << dir_ << ": " << strerror(errno) << " (is bpffs mounted at /sys/fs/bpf?)";
  }
  void TearDown() override {
    unload();
    for (const dt::MapEntry &m : dt::map_catalog()) unlink((dir_ + "/" + m.name).c_str());
    rmdir(dir_.c_str());
  }

  // Loads the object's maps as the agent does (pinned by name under dir_, reusing pins),
  // without its programs (the maps are what is pinned). False and a failure on error.
  bool load() {
    unload();
    LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = dir_.c_str());
    skel_ = dthrottle_bpf__open_opts(&oo);
    if (!skel_) return ADD_FAILURE() << "cannot open the BPF object: " << strerror(errno), false;
    bpf_program *p;
    bpf_object__for_each_program(p, skel_->obj) bpf_program__set_autoload(p, false);
    bpf_map__set_max_entries(skel_->maps.buckets, 1024);
    if (int rc = dthrottle_bpf__load(skel_); rc != 0)
      return ADD_FAILURE() << "cannot load the maps pinned in " << dir_ << ": " << strerror(-rc), false;
    return true;
  }
  void unload() {
    if (skel_) dthrottle_bpf__destroy(skel_);
    skel_ = nullptr;
  }
  // The id of the map pinned as `name` (0: none): the same id after a load means reused.
  uint32_t pinned_id(const char *name) {
    const int fd = bpf_obj_get((dir_ + "/" + name).c_str());
    if (fd < 0) return 0;
    bpf_map_info info{};
    uint32_t len = sizeof info;
    const uint32_t id = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.id : 0;
    close(fd);
    return id;
  }

  const std::string dir_ = "/sys/fs/bpf/dthrottle-layout-test-" + std::to_string(getpid());
  dthrottle_bpf *skel_ = nullptr;
};

TEST_F(PinLayout, NoPinsAreLayoutZeroAndAFreshLoadWritesItsVersion) {
  EXPECT_EQ(dt::pinned_layout(dir_), 0u) << "an empty directory holds no layout";
  std::string err;
  EXPECT_TRUE(dt::prepare_pins(dir_, dt::map_catalog(), dt::kLayoutVersion, &err)) << err;
  ASSERT_TRUE(load());
  EXPECT_EQ(dt::pinned_layout(dir_), 1u) << "maps without a written marker read as layout 1";
  ASSERT_EQ(dt::write_layout(bpf_map__fd(skel_->maps.layout), dt::kLayoutVersion), 0);
  EXPECT_EQ(dt::pinned_layout(dir_), dt::kLayoutVersion);
}

TEST_F(PinLayout, PinsWithoutAMarkerAreLayoutOne) {
  ASSERT_TRUE(load());
  ASSERT_EQ(dt::write_layout(bpf_map__fd(skel_->maps.layout), 7), 0);
  unload();
  ASSERT_EQ(unlink((dir_ + "/" + DT_MAP_LAYOUT).c_str()), 0) << "as an agent before the version pinned them";
  EXPECT_EQ(dt::pinned_layout(dir_), 1u);
}

TEST_F(PinLayout, NewerPinsAreRefusedWithWhatToDo) {
  ASSERT_TRUE(load());
  ASSERT_EQ(dt::write_layout(bpf_map__fd(skel_->maps.layout), dt::kLayoutVersion + 1), 0);
  unload();
  const uint32_t buckets = pinned_id(DT_MAP_BUCKETS);
  std::string err;
  EXPECT_FALSE(dt::prepare_pins(dir_, dt::map_catalog(), dt::kLayoutVersion, &err));
  const std::string want = "are layout " + std::to_string(dt::kLayoutVersion + 1) + ", this agent is layout " +
                           std::to_string(dt::kLayoutVersion) + " (older)";
  EXPECT_NE(err.find(want), std::string::npos) << err;
  EXPECT_NE(err.find("remove " + dir_), std::string::npos) << "the message says what to do: " << err;
  EXPECT_EQ(pinned_id(DT_MAP_BUCKETS), buckets) << "a refusal touches no pin";
  dt::PinnedMaps readers;  // agent stats, top, explain: values of other sizes are not read
  std::string read_err;
  EXPECT_FALSE(readers.open(dir_, &read_err));
  EXPECT_NE(read_err.find("are layout " + std::to_string(dt::kLayoutVersion + 1)), std::string::npos) << read_err;
}

// A build whose `cluster_exempt` changed (layout bumped) meets pins of the layout before: it is
// made anew, the buckets (and every other map) are the same maps with their contents.
TEST_F(PinLayout, OlderPinsKeepTheBucketsAndRemakeTheChangedMaps) {
  ASSERT_TRUE(load());
  ASSERT_EQ(dt::write_layout(bpf_map__fd(skel_->maps.layout), dt::kLayoutVersion), 0);
  dt_key key{};
  key.addr[15] = 7;
  dt_bucket b{};
  b.passed = 42;
  ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.buckets), &key, &b, BPF_ANY), 0) << strerror(errno);
  const uint32_t buckets = pinned_id(DT_MAP_BUCKETS), exempt = pinned_id(DT_MAP_CLUSTER_EXEMPT);
  unload();

  std::vector<dt::MapEntry> next = dt::map_catalog();
  const uint32_t bumped = dt::kLayoutVersion + 1;
  for (dt::MapEntry &m : next)
    if (std::string(m.name) == DT_MAP_CLUSTER_EXEMPT) m.layout = bumped;
  EXPECT_EQ(dt::maps_to_recreate(next, dt::kLayoutVersion), std::vector<std::string>{DT_MAP_CLUSTER_EXEMPT});
  std::string err;
  ASSERT_TRUE(dt::prepare_pins(dir_, next, bumped, &err)) << err;
  EXPECT_EQ(pinned_id(DT_MAP_CLUSTER_EXEMPT), 0u) << "the changed map is unpinned, for the load to make it anew";
  EXPECT_EQ(pinned_id(DT_MAP_BUCKETS), buckets) << "the buckets stay pinned";

  ASSERT_TRUE(load());
  ASSERT_EQ(dt::write_layout(bpf_map__fd(skel_->maps.layout), bumped), 0);
  EXPECT_EQ(dt::pinned_layout(dir_), bumped);
  EXPECT_EQ(pinned_id(DT_MAP_BUCKETS), buckets) << "the load reused the pinned buckets";
  EXPECT_NE(pinned_id(DT_MAP_CLUSTER_EXEMPT), exempt) << "the load made a new cluster_exempt map";
  dt_bucket kept{};
  ASSERT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel_->maps.buckets), &key, &kept), 0) << "the bucket was lost";
  EXPECT_EQ(kept.passed, 42u);
  std::string again;
  EXPECT_TRUE(dt::prepare_pins(dir_, next, bumped, &again)) << again;
  EXPECT_EQ(pinned_id(DT_MAP_BUCKETS), buckets) << "pins of this agent's own layout are left alone";
}

TEST(PinLayoutPlan, RecreatesThePinnedMapsChangedSinceThePinsLayout) {
  const std::vector<dt::MapEntry> cat = {
      {"a", true, 1, ""}, {"b", true, 2, ""}, {"c", true, 3, ""}, {"scratch", false, 3, ""}};
  EXPECT_EQ(dt::maps_to_recreate(cat, 1), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(dt::maps_to_recreate(cat, 2), (std::vector<std::string>{"c"}));
  EXPECT_TRUE(dt::maps_to_recreate(cat, 3).empty());
}

}  // namespace
